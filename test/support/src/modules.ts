// What importing a module loads: a child Node imports it and records every module it resolves. The footprint
// tests use it to keep heavy dependencies out of the entry points that must start light.

/** Imports `entry` (a file URL) in a child Node; returns how many modules were resolved and the URLs that contain `needle`. */
export async function modulesLoadedBy(entry: string, needle: string): Promise<{ total: number; matching: number; stderr: string }> {
  const { spawnSync } = await import('node:child_process');
  const script = `
    import { registerHooks } from 'node:module';
    const loaded = [];
    registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); loaded.push(r.url); return r; } });
    await import(${JSON.stringify(entry)});
    console.log(JSON.stringify({ total: loaded.length, matching: loaded.filter((u) => u.includes(${JSON.stringify(needle)})).length }));
  `;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  if (child.stderr !== '') return { total: 0, matching: 0, stderr: child.stderr };
  return { ...(JSON.parse(child.stdout) as { total: number; matching: number }), stderr: '' };
}
