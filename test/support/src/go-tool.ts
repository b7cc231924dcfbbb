// Command-line tools that tests compare Syncline against (sops, kustomize, jsonnet, ...), built from their
// official Go modules with `go install module/cmd@version` and cached by what goes into the build: the
// first run on a machine builds (minutes), every later run finds the binary. A tool is built only when a
// test that needs it asks for it, and one build runs at a time on a machine (a lock shared by every test
// process), so a cold run never compiles two tools at once on a small machine. A tool's modules are downloaded
// into the shared module cache before the lock is taken: downloads are network, not CPU, the go command makes
// concurrent downloads into one module cache safe, and so one tool's download overlaps another's compile.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Go is not installed: the control plane and every tool here are built from Go modules. */
export class MissingGoError extends Error {
  constructor() {
    super(
      'The test control plane (test/control-plane) is built from the official Kubernetes Go modules and needs Go 1.26 or newer. ' +
        'Install it (https://go.dev/dl, or your package manager), or point the tests at an existing cluster with ' +
        'SYNCLINE_TEST_KUBECONFIG=/path/to/kubeconfig.',
    );
    this.name = 'MissingGoError';
  }
}

export interface GoTool {
  /** The binary's name in the cache, e.g. `sops`. */
  readonly name: string;
  /** The package to install, e.g. `github.com/getsops/sops/v3/cmd/sops`. */
  readonly pkg: string;
  /** The module version, e.g. `v3.11.0`. */
  readonly version: string;
  /** Linker flags (version stamps); part of the cache key. */
  readonly ldflags?: string;
  /** Build tags; part of the cache key. */
  readonly tags?: readonly string[];
  /** Set CGO_ENABLED=1 (default 0: a static binary that needs no C toolchain). */
  readonly cgo?: boolean;
}

export interface GoToolOptions {
  /** Directory for the binary cache; default `$XDG_CACHE_HOME/syncline` or `~/.cache/syncline`. */
  readonly cacheDir?: string;
  /** Called with one line of progress at a time. */
  readonly onProgress?: (line: string) => void;
  /**
   * Only download the modules the build needs, without the lock and without compiling: a run warms the
   * module cache this way while something else compiles. The path returned is where the binary will be.
   */
  readonly downloadOnly?: boolean;
}

function defaultCacheDir(): string {
  // Test-only helper: reading the environment here is the test harness's own composition root.
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'syncline');
}

function toolKey(tool: GoTool): string {
  const hash = createHash('sha256');
  for (const part of [tool.pkg, tool.version, tool.ldflags ?? '', (tool.tags ?? []).join(','), tool.cgo === true ? 'cgo' : 'nocgo'])
    hash.update(part).update('\0');
  return `${tool.version}-${hash.digest('hex').slice(0, 12)}`;
}

/** The path of the tool's binary, built when the cache has none for this package, version and flags. */
export async function ensureGoTool(tool: GoTool, options: GoToolOptions = {}): Promise<string> {
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const dir = join(cacheDir, 'tools', tool.name, toolKey(tool));
  const binary = join(dir, tool.name);
  if (existsSync(binary)) return binary;
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (go.error !== undefined || go.status !== 0) throw new MissingGoError();
  // `go install -n` resolves and downloads everything the install needs, then only prints the build commands.
  // Outside any module, so `go install pkg@version` uses the tool's own go.mod and go.sum.
  await downloadModules(tool.name, ['go', ...installArgs(tool, '-n')], tmpdir(), toolEnv(tool, tmpdir()), options);
  if (options.downloadOnly === true) return binary;
  return withBuildLock(join(cacheDir, 'tools', '.build-lock'), options, async () => {
    // Another process may have built it while this one waited for the lock.
    if (existsSync(binary)) return binary;
    await buildTool(tool, dir, binary, options);
    return binary;
  });
}

function installArgs(tool: GoTool, ...extra: readonly string[]): string[] {
  const args = ['install', ...extra, '-trimpath', `-ldflags=-s -w ${tool.ldflags ?? ''}`.trim()];
  if (tool.tags !== undefined && tool.tags.length > 0) args.push(`-tags=${tool.tags.join(',')}`);
  args.push(`${tool.pkg}@${tool.version}`);
  return args;
}

function toolEnv(tool: GoTool, gobin: string): NodeJS.ProcessEnv {
  return { ...process.env, GOBIN: gobin, GOTOOLCHAIN: 'local', CGO_ENABLED: tool.cgo === true ? '1' : '0', GOFLAGS: '' };
}

/**
 * Runs a go command that downloads what a build needs into the module cache without compiling it (`go install
 * -n`, `go list -deps`), outside the build lock. Best effort: when it fails, the build downloads what is
 * missing itself and reports the error.
 */
export async function downloadModules(
  name: string,
  command: readonly [string, ...string[]],
  cwd: string,
  env: NodeJS.ProcessEnv,
  options: GoToolOptions,
): Promise<void> {
  const started = Date.now();
  const [file, ...args] = command;
  const outcome = await new Promise<{ code: number | null; output: string; downloaded: boolean }>((resolve) => {
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let output = '';
    let downloaded = false;
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      downloaded ||= text.includes('go: downloading');
      output = (output + text).slice(-2000);
    });
    child.on('error', (error) => resolve({ code: null, output: error.message, downloaded }));
    child.on('close', (code) => resolve({ code, output, downloaded }));
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  if (outcome.code === 0) {
    if (outcome.downloaded) options.onProgress?.(`downloaded the modules ${name} needs in ${seconds}s`);
  } else
    options.onProgress?.(`${name}: downloading modules ahead of the build failed (the build will retry): ${outcome.output.trim().split('\n').at(-1) ?? ''}`);
}

async function buildTool(tool: GoTool, dir: string, binary: string, options: GoToolOptions): Promise<void> {
  // Built aside, then renamed: a build that dies half way leaves nothing under the key.
  const aside = join(dir, `build-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(aside, { recursive: true });
  options.onProgress?.(`building ${tool.name} ${tool.version} from its Go module (first run on this machine; minutes)`);
  const started = Date.now();
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn('go', installArgs(tool), {
        // Outside any module, so `go install pkg@version` uses the tool's own go.mod and go.sum.
        cwd: aside,
        env: toolEnv(tool, aside),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0 ? resolve() : reject(new Error(`go install ${tool.pkg}@${tool.version} failed (exit ${code}):\n${output.slice(-4000)}`)),
      );
    });
    // `go install` names the binary after the package's last element, or the one before a major-version suffix
    // (sigs.k8s.io/kustomize/kustomize/v5 → kustomize).
    const elements = tool.pkg.split('/');
    const last = elements.at(-1) ?? tool.name;
    const built = join(aside, /^v[0-9]+$/.test(last) && elements.length > 1 ? (elements.at(-2) ?? tool.name) : last);
    renameSync(built, binary);
  } finally {
    rmSync(aside, { recursive: true, force: true });
  }
  options.onProgress?.(`built ${tool.name} in ${Math.round((Date.now() - started) / 1000)}s`);
}

/** A binary built from a Go module kept in this repository (test/support/registry, packages/render/engine, …). */
export interface LocalGoBuild {
  /** Named in progress lines and errors. */
  readonly name: string;
  /** The module's directory (the build runs there). */
  readonly moduleDir: string;
  /** Where the binary goes, under the cache directory: `[...subdirs, key]`, the key a hash of what goes into the build. */
  readonly cachePath: readonly string[];
  readonly binaryName: string;
  /** The build command, given the path to write the binary to. */
  readonly command: (out: string) => readonly [string, ...string[]];
  /** The build's environment (default: this process's). */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * A go command run in the module's directory with `env` before the lock is taken, that downloads what the
   * build needs without compiling it; default `go list -deps .` (the main package's imports, this platform).
   */
  readonly download?: readonly [string, ...string[]];
  /** What the progress line says is being built, e.g. "the registry (distribution v3.1.2) from its Go module". */
  readonly what: string;
}

/** The hash of a module directory's build inputs: the named files, or every non-test .go file plus go.mod and go.sum. */
export function moduleKey(moduleDir: string, files?: readonly string[], length = 16): string {
  const hash = createHash('sha256');
  const names = files ?? readdirSync(moduleDir).filter((f) => f === 'go.mod' || f === 'go.sum' || (f.endsWith('.go') && !f.endsWith('_test.go')));
  for (const file of [...names].sort())
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(join(moduleDir, file)))
      .update('\0');
  return hash.digest('hex').slice(0, length);
}

/** The path of a local module's binary, built when the cache has none (minutes on a cold machine); one build at a time per machine. */
export async function ensureLocalGoBuild(build: LocalGoBuild, options: GoToolOptions = {}): Promise<string> {
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const dir = join(cacheDir, ...build.cachePath);
  const binary = join(dir, build.binaryName);
  if (existsSync(binary)) return binary;
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (go.error !== undefined || go.status !== 0) throw new MissingGoError();
  await downloadModules(build.name, build.download ?? ['go', 'list', '-deps', '.'], build.moduleDir, build.env ?? process.env, options);
  if (options.downloadOnly === true) return binary;
  return withBuildLock(join(cacheDir, 'tools', '.build-lock'), options, async () => {
    if (existsSync(binary)) return binary;
    mkdirSync(dir, { recursive: true });
    // Built aside, then renamed: a build that dies half way leaves nothing under the key.
    const aside = `${binary}.${process.pid}.${randomBytes(4).toString('hex')}`;
    options.onProgress?.(`building ${build.what} (first run on this machine; minutes)`);
    const started = Date.now();
    const [command, ...args] = build.command(aside);
    try {
      await new Promise<void>((resolve, reject) => {
        const child = spawn(command, args, { cwd: build.moduleDir, env: build.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`building ${build.name} failed (exit ${code}):\n${output.slice(-4000)}`))));
      });
      renameSync(aside, binary);
    } finally {
      rmSync(aside, { force: true });
    }
    options.onProgress?.(`built ${build.name} in ${Math.round((Date.now() - started) / 1000)}s`);
    return binary;
  });
}

/**
 * Runs `fn` holding a machine-wide lock (a directory created atomically). A lock left by a process that
 * died is taken over; a waiting process says so every 30 s.
 */
export async function withBuildLock<T>(path: string, options: GoToolOptions, fn: () => Promise<T>): Promise<T> {
  mkdirSync(join(path, '..'), { recursive: true });
  const waitingSince = Date.now();
  let lastSaid = 0;
  for (;;) {
    try {
      mkdirSync(path);
      writeFileSync(join(path, 'pid'), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (holderDied(path)) {
        rmSync(path, { recursive: true, force: true });
        continue;
      }
      if (Date.now() - lastSaid > 30_000) {
        options.onProgress?.(`waiting for another tool build to finish (${Math.round((Date.now() - waitingSince) / 1000)}s)`);
        lastSaid = Date.now();
      }
      await sleep(1000);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(path, { recursive: true, force: true });
  }
}

function holderDied(path: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(path, 'pid'), 'utf8'));
  } catch {
    // The holder has created the directory but not yet written its pid: give it a moment, not forever.
    try {
      return Date.now() - statSync(path).mtimeMs > 10_000;
    } catch {
      return false;
    }
  }
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
