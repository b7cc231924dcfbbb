// Times every build a cold `./pnpm test` does from Go modules, one at a time, as a fresh machine would do them:
// a new, empty binary cache (XDG_CACHE_HOME), Go module cache (GOMODCACHE) and Go build cache (GOCACHE) in a
// temporary directory, shared across the builds in the order a run asks for them, so nothing in
// ~/.cache/syncline or the machine's Go caches is read or written. For each build: the wall-clock seconds, the
// CPU seconds of the go processes (on a loaded machine the wall clock mostly measures the other load; CPU
// seconds do not) and the load average before and after. The temporary directory is removed at the end.
//
//   node scripts/cold-builds.ts [TOOL...]     (default: all, in run order; names as printed)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  LOCAL_KMS_TOOL,
  SOPS_TOOL,
  ensureControlPlaneBinary,
  ensureGiteaBinary,
  ensureGoTool,
  ensureHelm,
  ensureJsonnet,
  ensureKustomize,
  ensureKwok,
  ensureRegistry,
  ensureRenderEngine,
  ensureVaultTransit,
} from '@syncline/test-support';

type Progress = (line: string) => void;

/** In the order a cold `./pnpm test` builds them: the integration setup, then the unit tests, then the integration tests. */
const BUILDS: readonly (readonly [string, (onProgress: Progress) => Promise<unknown>])[] = [
  ['control-plane', (onProgress) => ensureControlPlaneBinary({ onProgress })],
  ['gitea', (onProgress) => ensureGiteaBinary({ onProgress })],
  ['syncline-render', (onProgress) => ensureRenderEngine({ onProgress })],
  ['helm', (onProgress) => ensureHelm({ onProgress })],
  ['kustomize', (onProgress) => ensureKustomize({ onProgress })],
  ['jsonnet', (onProgress) => ensureJsonnet({ onProgress })],
  ['sops', (onProgress) => ensureGoTool(SOPS_TOOL, { onProgress })],
  ['local-kms', (onProgress) => ensureGoTool(LOCAL_KMS_TOOL, { onProgress })],
  ['vault-transit', (onProgress) => ensureVaultTransit({ onProgress })],
  ['registry', (onProgress) => ensureRegistry({ onProgress })],
  ['kwok', (onProgress) => ensureKwok({ onProgress })],
];

/** CPU seconds of this process's finished children (and theirs): the go commands and the compilers they ran. */
function childrenCpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

const load = (): string =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !BUILDS.some(([known]) => known === name));
if (unknown.length > 0) {
  console.error(`unknown: ${unknown.join(', ')}; known: ${BUILDS.map(([name]) => name).join(', ')}`);
  process.exit(2);
}
const root = mkdtempSync(join(tmpdir(), 'syncline-cold-'));
process.env['XDG_CACHE_HOME'] = join(root, 'cache');
process.env['GOMODCACHE'] = join(root, 'gomodcache');
process.env['GOCACHE'] = join(root, 'gocache');
let failed = false;
try {
  for (const [name, build] of BUILDS.filter(([known]) => wanted.length === 0 || wanted.includes(known))) {
    const started = Date.now();
    const cpuBefore = childrenCpuSeconds();
    const loadBefore = load();
    const notes: string[] = [];
    const onProgress: Progress = (line) => {
      if (/^(downloaded|built)/.test(line)) notes.push(line);
    };
    let outcome = 'ok';
    try {
      await build(onProgress);
    } catch (error) {
      failed = true;
      outcome = `FAILED: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`;
    }
    const wall = Math.round((Date.now() - started) / 1000);
    const cpu = Math.round(childrenCpuSeconds() - cpuBefore);
    console.log(`${name}: ${wall} s wall, ${cpu} CPU-s, load ${loadBefore} → ${load()}; ${outcome}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`);
  }
} finally {
  // The module cache is read-only as the go command writes it.
  execFileSync('chmod', ['-R', 'u+w', root]);
  rmSync(root, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
