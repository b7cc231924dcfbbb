// Builds (once per go.sum) and runs the real control plane in test/control-plane: embedded etcd,
// kube-apiserver and kube-controller-manager in one Go binary, on loopback and free ports.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { MissingGoError, downloadModules } from './go-tool.ts';

const moduleDir = join(import.meta.dirname, '..', '..', 'control-plane');

export type ControlPlaneOptions = {
  /** Directory for the binary cache; default `$XDG_CACHE_HOME/syncline` or `~/.cache/syncline`. */
  readonly cacheDir?: string;
  /** Data directory (etcd, certificates, kubeconfig); default a new temporary directory, removed on stop. */
  readonly dataDir?: string;
  /** Called with one line of progress at a time (the first build takes minutes). */
  readonly onProgress?: (line: string) => void;
  /** How long to wait for readiness; default 180 s. */
  readonly startTimeoutMs?: number;
  /**
   * Also run the workload controllers (Deployment, ReplicaSet, StatefulSet, Job) and kube-scheduler, so Pods
   * are scheduled onto nodes a simulator registers (see kwok.ts); default false: no Pod is ever scheduled.
   */
  readonly workloads?: boolean;
};

export type ControlPlane = {
  readonly server: string;
  readonly kubeconfigPath: string;
  readonly dataDir: string;
  readonly logPath: string;
  readonly pid: number;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};

function defaultCacheDir(): string {
  // Test-only helper: reading the environment here is the test harness's own composition root.
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'syncline');
}

/** The Kubernetes version the control plane is built from (go.mod's k8s.io/kubernetes), e.g. `v1.36.3`. */
function kubernetesVersion(): string {
  const match = /^\s*k8s\.io\/kubernetes (v\d+\.\d+\.\d+)\s*$/mu.exec(readFileSync(join(moduleDir, 'go.mod'), 'utf8'));
  if (match?.[1] === undefined) throw new Error('test/control-plane/go.mod does not require k8s.io/kubernetes at a release version');
  return match[1];
}

/**
 * Linker flags stamping the real version into k8s.io/component-base/version, as Kubernetes' own build
 * does: without them the API server reports v0.0.0-master, `kubectl version` warns and Helm refuses
 * charts whose kubeVersion is a real range.
 */
function versionLdflags(): string {
  const version = kubernetesVersion();
  const [major, minor] = version.slice(1).split('.');
  const pkg = 'k8s.io/component-base/version';
  return [`-X ${pkg}.gitVersion=${version}`, `-X ${pkg}.gitMajor=${major}`, `-X ${pkg}.gitMinor=${minor}`, `-X ${pkg}.gitTreeState=clean`].join(' ');
}

/** The cache key: the hash of go.sum plus the sources and the linker flags, so an edit to either rebuilds. */
function buildKey(): string {
  const hash = createHash('sha256');
  hash.update(versionLdflags());
  for (const file of ['go.mod', 'go.sum', 'main.go', 'apiserver.go', 'controllermanager.go', 'scheduler.go', 'etcd.go', 'kubeconfig.go', 'pki.go']) {
    hash.update(file).update(readFileSync(join(moduleDir, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

export { MissingGoError };

function buildEnv(): NodeJS.ProcessEnv {
  return { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' };
}

/** Returns the path of the control-plane binary, building it when the cache has none for this source. */
export async function ensureControlPlaneBinary(options: Pick<ControlPlaneOptions, 'cacheDir' | 'onProgress'> = {}): Promise<string> {
  const cacheDir = join(options.cacheDir ?? defaultCacheDir(), 'control-plane', buildKey());
  const binary = join(cacheDir, 'control-plane');
  if (existsSync(binary)) return binary;

  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (go.error !== undefined || go.status !== 0) throw new MissingGoError();

  mkdirSync(cacheDir, { recursive: true });
  // The modules first (network), then the compile: a caller may run other downloads beside the first and
  // nothing beside the second.
  await downloadModules('the test control plane', ['go', 'list', '-deps', '.'], moduleDir, buildEnv(), options);
  // Several processes may start at once (vitest workers, demo + tests): each builds aside, the first
  // rename wins and the others' identical binaries replace it harmlessly.
  const aside = `${binary}.${process.pid}.${randomBytes(4).toString('hex')}`;
  options.onProgress?.(`building the test control plane (first run on this machine; a few minutes) with ${go.stdout.trim()}`);
  const started = Date.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn('go', ['build', '-trimpath', `-ldflags=-s -w ${versionLdflags()}`, '-o', aside, '.'], {
      cwd: moduleDir,
      env: buildEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const collect = (chunk: Buffer): void => {
      output += chunk.toString();
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') options.onProgress?.(line.trim());
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const tick = setInterval(() => options.onProgress?.(`still building… ${Math.round((Date.now() - started) / 1000)}s`), 15_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(tick);
      if (code === 0) resolve();
      else reject(new Error(`go build of test/control-plane failed (exit ${code}):\n${output.slice(-4000)}`));
    });
  });
  renameSync(aside, binary);
  options.onProgress?.(`built the test control plane in ${Math.round((Date.now() - started) / 1000)}s`);
  return binary;
}

type ReadyLine = { ready: true; server: string; kubeconfig: string; pid: number };

/** Starts one control plane instance; several can run at once, each with its own data dir and ports. */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binary = await ensureControlPlaneBinary(options);
  const ownsDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'syncline-cp-')));
  mkdirSync(dataDir, { recursive: true });
  const logPath = join(dataDir, 'control-plane.log');
  const log = createWriteStream(logPath);

  const args = ['--data-dir', dataDir, ...(options.workloads === true ? ['--workloads'] : [])];
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr.pipe(log);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

  const ready = await new Promise<ReadyLine>((resolve, reject) => {
    const timeout = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the test control plane did not become ready within ${(options.startTimeoutMs ?? 180_000) / 1000}s; log: ${logPath}`));
    }, options.startTimeoutMs ?? 180_000);
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as Partial<ReadyLine>;
        if (parsed.ready === true) {
          clearTimeout(timeout);
          resolve(parsed as ReadyLine);
        }
      } catch {
        // not the ready line
      }
    });
    void exited.then(async (code) => {
      clearTimeout(timeout);
      const tail = (await readFile(logPath, 'utf8').catch(() => '')).split('\n').slice(-30).join('\n');
      reject(new Error(`the test control plane exited (code ${code}) before it was ready; last log lines:\n${tail}`));
    });
  });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(killer);
      }
      log.end();
      if (ownsDataDir) await rm(dataDir, { recursive: true, force: true });
    })();
    return stopping;
  };
  // A test run that dies must not leave an API server behind.
  process.once('exit', () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    if (ownsDataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  return {
    server: ready.server,
    kubeconfigPath: ready.kubeconfig,
    dataDir,
    logPath,
    pid: ready.pid,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
