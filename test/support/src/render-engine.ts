// The render process (packages/render/engine) for tests, benches and the demo: built from its Go module with
// the module's own build.sh and cached by the hash of what goes into the build (go.mod, go.sum, the sources
// and build.sh), so an edit rebuilds and every other run finds the binary. One build at a time per machine.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ensureLocalGoBuild, moduleKey, type GoToolOptions } from './go-tool.ts';

const moduleDir = join(import.meta.dirname, '..', '..', '..', 'packages', 'render', 'engine');

/** The path of the syncline-render binary for this source, built when the cache has none. */
export function ensureRenderEngine(options: GoToolOptions = {}): Promise<string> {
  const files = readdirSync(moduleDir).filter((f) => f === 'go.mod' || f === 'go.sum' || f === 'build.sh' || (f.endsWith('.go') && !f.endsWith('_test.go')));
  return ensureLocalGoBuild(
    {
      name: 'syncline-render',
      moduleDir,
      cachePath: ['render-engine', moduleKey(moduleDir, files)],
      binaryName: 'syncline-render',
      command: (out) => ['sh', join(moduleDir, 'build.sh'), out],
      // What build.sh sets, so downloading ahead of the lock resolves the same modules.
      env: { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
      what: 'syncline-render from packages/render/engine',
    },
    options,
  );
}
