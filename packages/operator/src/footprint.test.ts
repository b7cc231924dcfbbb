// The operator's entry points stay light: @kubernetes/client-node (loaded only for exec and auth-provider
// users) is never imported by `syncline run` or the CLI commands.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('module footprint', () => {
  // @kubernetes/client-node costs ~80 MB of RSS when imported; `syncline run` and the CLI commands must not load it.
  it.each(['./main.ts', './client.ts', './options.ts'])('importing %s does not load @kubernetes/client-node', (entry) => {
    const script = `
      import { registerHooks } from 'node:module';
      const loaded = [];
      registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); loaded.push(r.url); return r; } });
      await import(${JSON.stringify(new URL(entry, import.meta.url).href)});
      console.log(JSON.stringify({ total: loaded.length, clientNode: loaded.filter((u) => u.includes('@kubernetes/client-node')).length }));
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(child.stderr).toBe('');
    const result = JSON.parse(child.stdout) as { total: number; clientNode: number };
    expect(result.total).toBeGreaterThan(50);
    expect(result.clientNode).toBe(0);
    // A child Node loading the module graph: seconds on a loaded machine.
  }, 60_000);
});
