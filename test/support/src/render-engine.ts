// The render process (packages/render/engine) for tests, benches and the demo: built from its Go module with
// the module's own build.sh and cached by the hash of what goes into the build (go.mod, go.sum, the sources
// and build.sh), so an edit rebuilds and every other run finds the binary. One build at a time per machine.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { MissingGoError } from './control-plane.ts';
import { withBuildLock } from './go-tool.ts';

const moduleDir = join(import.meta.dirname, '..', '..', '..', 'packages', 'render', 'engine');

function defaultCacheDir(): string {
  // Test-only helper: reading the environment here is the test harness's own composition root.
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'syncline');
}

function buildKey(): string {
  const hash = createHash('sha256');
  const files = readdirSync(moduleDir).filter((f) => f === 'go.mod' || f === 'go.sum' || f === 'build.sh' || (f.endsWith('.go') && !f.endsWith('_test.go')));
  for (const file of files.sort()) hash.update(file).update('\0').update(readFileSync(join(moduleDir, file))).update('\0');
  return hash.digest('hex').slice(0, 16);
}

/** The path of the syncline-render binary for this source, built when the cache has none. */
export async function ensureRenderEngine(options: { cacheDir?: string; onProgress?: (line: string) => void } = {}): Promise<string> {
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const dir = join(cacheDir, 'render-engine', buildKey());
  const binary = join(dir, 'syncline-render');
  if (existsSync(binary)) return binary;
  return withBuildLock(join(cacheDir, 'tools', '.build-lock'), options, async () => {
    if (existsSync(binary)) return binary;
    const go = spawnSync('go', ['version'], { encoding: 'utf8' });
    if (go.error !== undefined || go.status !== 0) throw new MissingGoError();
    mkdirSync(dir, { recursive: true });
    const aside = `${binary}.${process.pid}.${randomBytes(4).toString('hex')}`;
    options.onProgress?.('building syncline-render from packages/render/engine (first run on this machine; minutes)');
    const started = Date.now();
    try {
      await new Promise<void>((resolve, reject) => {
        const child = spawn('sh', [join(moduleDir, 'build.sh'), aside], { cwd: moduleDir, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`building syncline-render failed (exit ${code}):\n${output.slice(-4000)}`))));
      });
      renameSync(aside, binary);
    } finally {
      rmSync(aside, { force: true });
    }
    options.onProgress?.(`built syncline-render in ${Math.round((Date.now() - started) / 1000)}s`);
    return binary;
  });
}
