// Helm for the chart tests, built from its official Go module (no download of a release binary) and
// cached per version and build flags: the first build takes minutes, every later run finds the binary.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { MissingGoError } from '@syncline/test-support';

/** The newest Helm v3 (`go list -m -versions helm.sh/helm/v3`). */
export const HELM_VERSION = 'v3.22.0';
/**
 * The Kubernetes minor of the k8s.io modules this Helm version requires (v0.37 → 1.37). Helm's Makefile
 * passes it at link time; without it `helm template` and `helm lint` assume Kubernetes 1.20.
 */
const HELM_KUBE_MINOR = '37';

const ldflags = [
  '-s',
  '-w',
  `-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`,
  '-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1',
  `-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${HELM_KUBE_MINOR}`,
  '-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1',
  `-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${HELM_KUBE_MINOR}`,
].join(' ');

function defaultCacheDir(): string {
  // Test-only helper: reading the environment here is the test harness's own composition root.
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'syncline');
}

/** The path of a Helm binary, building it with `go install` when the cache has none for this version. */
export async function ensureHelm(options: { cacheDir?: string; onProgress?: (line: string) => void } = {}): Promise<string> {
  const key = `${HELM_VERSION}-${createHash('sha256').update(ldflags).digest('hex').slice(0, 8)}`;
  const dir = join(options.cacheDir ?? defaultCacheDir(), 'helm', key);
  const binary = join(dir, 'helm');
  if (existsSync(binary)) return binary;

  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (go.error !== undefined || go.status !== 0) throw new MissingGoError();
  // Build aside, then rename: concurrent runs each build, the first rename wins, the rest are identical.
  const aside = join(dir, `build-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(aside, { recursive: true });
  options.onProgress?.(`building Helm ${HELM_VERSION} from its Go module (first run on this machine; a few minutes)`);
  const started = Date.now();
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn('go', ['install', '-trimpath', `-ldflags=${ldflags}`, `helm.sh/helm/v3/cmd/helm@${HELM_VERSION}`], {
        // Outside any module, so `go install pkg@version` uses Helm's own go.mod and go.sum.
        cwd: aside,
        env: { ...process.env, GOBIN: aside, GOTOOLCHAIN: 'local', CGO_ENABLED: '0', GOFLAGS: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`go install helm ${HELM_VERSION} failed (exit ${code}):\n${output.slice(-4000)}`))));
    });
    renameSync(join(aside, 'helm'), binary);
  } finally {
    rmSync(aside, { recursive: true, force: true });
  }
  options.onProgress?.(`built Helm in ${Math.round((Date.now() - started) / 1000)}s`);
  return binary;
}

export type HelmResult = { status: number | null; stdout: string; stderr: string };

/** Runs helm with an empty, throwaway home so no user config or repository cache leaks in. */
export function runHelm(binary: string, args: readonly string[], home: string): HelmResult {
  const result = spawnSync(binary, [...args], {
    encoding: 'utf8',
    // HOME too: without it the Kubernetes client keeps its discovery cache in ./.kube of the working directory.
    env: { PATH: process.env['PATH'] ?? '', HOME: home, HELM_CACHE_HOME: join(home, 'cache'), HELM_CONFIG_HOME: join(home, 'config'), HELM_DATA_HOME: join(home, 'data') },
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
