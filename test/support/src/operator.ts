// Runs the real operator process (`syncline run`) against a kubeconfig, for end-to-end tests and the demo.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const mainPath = join(import.meta.dirname, '..', '..', '..', 'packages', 'cli', 'src', 'main.ts');

export type OperatorProcess = {
  readonly pid: number;
  /** HOST:PORT of /healthz, /readyz and /metrics. */
  readonly probeAddress: string;
  /** HOST:PORT of the webhook receiver (POST /hooks/<provider>); undefined when started with --webhook-addr off. */
  readonly webhookAddress: string | undefined;
  /** HOST:PORT of the web UI; undefined unless started with --ui-addr. */
  readonly uiAddress: string | undefined;
  /**
   * Log lines so far (pino JSON, parsed; a line that is not JSON as `{ msg: line }`). Parsed when read, not as they
   * arrive: a bench's measured phases do not pay for parsing the operator's output. The same array each time, grown.
   */
  readonly logs: Record<string, unknown>[];
  readonly exited: Promise<number | null>;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
  /** SIGKILL: a crash. */
  kill(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};

/**
 * The Node flags the bundle's first line starts it with (packages/cli/src/bundle-entry.ts; test/dockerfile checks
 * they agree): --liftoff-only keeps V8 from compiling undici's WebAssembly HTTP parser twice (about 9 MB of RSS).
 * V8 takes it only on the command line.
 */
export const BUNDLE_SHEBANG_FLAGS: readonly string[] = ['--liftoff-only'];

/**
 * The Node flags the operator ships with (the image's NODE_OPTIONS, then the bundle's shebang; test/dockerfile checks they agree): a young
 * generation of at most 3 × 4 MB. V8's default lets it grow to 3 × 32 MB in a burst of reconciles, and reads the
 * bound only at start. `pnpm bench operator` (200 syncs), two runs each: 8 MB: peak RSS 176–177 MB, new commit
 * 1.88–1.96 s; 16 MB: 183–213 MB, 1.72–2.56 s; V8 defaults: 205 MB, 1.74 s; --optimize-for-size (main.ts's
 * fallback): 153–158 MB, 2.17–2.25 s. Later, on a build that needed less (200 syncs, three runs each): 4 MB
 * against 8 MB: peak RSS 119–120 MB against 128–130 MB, the operator's CPU to all Ready and for the new commit
 * 2.21–2.25 s and 1.33–1.67 s against 2.31–2.38 s and 1.88–2.01 s (2 MB: 117 MB, the same CPU).
 */
export const OPERATOR_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', ...BUNDLE_SHEBANG_FLAGS];

/**
 * The environment the operator ships with (the image's ENV beside NODE_OPTIONS; test/dockerfile checks they agree).
 * MALLOC_ARENA_MAX=2: glibc's malloc gives each thread that allocates (V8's compiler and GC helpers, libuv's pool) an
 * arena of its own, up to 8 per core, and what one of them freed stays resident there; two arenas hold the operator's
 * native allocations with less left over. `pnpm bench operator --scope cluster --layout namespace-per-sync --syncs
 * 1000`: memory outside V8's heap at the RSS peak 20–23 MB in most runs against 24–27 MB, the operator's CPU per phase the same.
 */
export const OPERATOR_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

export async function startOperator(options: {
  kubeconfig: string;
  args?: readonly string[];
  cacheDir?: string;
  echo?: boolean;
  /** Node's own flags for the operator process, e.g. `--cpu-prof` (a bench's --profile). */
  nodeArgs?: readonly string[];
  /**
   * The command that is `syncline` (its arguments follow), e.g. the built image's entrypoint run in its
   * root filesystem; the kubeconfig and cache paths are then paths as that command sees them. Default:
   * this Node with OPERATOR_NODE_FLAGS and the operator's sources.
   */
  command?: readonly [string, ...string[]];
  /** Added to this process's environment and OPERATOR_ENV (e.g. NODE_EXTRA_CA_CERTS for a test issuer's CA). */
  env?: Readonly<Record<string, string>>;
}): Promise<OperatorProcess> {
  const cacheDir = options.cacheDir ?? (await mkdtemp(join(tmpdir(), 'syncline-op-')));
  const [executable, ...prefix] = options.command ?? [process.execPath, ...OPERATOR_NODE_FLAGS, ...(options.nodeArgs ?? []), mainPath];
  const child: ChildProcess = spawn(
    executable,
    [
      ...prefix,
      'run',
      '--kubeconfig',
      options.kubeconfig,
      '--probe-addr',
      '127.0.0.1:0',
      '--cache-dir',
      cacheDir,
      '--allow-insecure-http',
      '--webhook-addr',
      '127.0.0.1:0',
      '--min-refresh-interval',
      '1s',
      ...(options.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...OPERATOR_ENV, ...options.env } },
  );
  const output = collectLogLines(child, options.echo === true);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const stderr: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const started = await new Promise<Record<string, unknown>>((resolve, reject) => {
    output.onStarted = resolve;
    void exited.then((code) => reject(new Error(`the operator exited (code ${code}) before it started: ${stderr.join('').slice(-2000)}`)));
  });
  const probeAddress = String(started['probes']);
  const webhookAddress = typeof started['webhooks'] === 'string' && started['webhooks'] !== 'off' ? started['webhooks'] : undefined;
  const uiAddress = typeof started['ui'] === 'string' && started['ui'] !== 'off' ? started['ui'] : undefined;
  const signal = async (name: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name);
    await exited;
  };
  const stop = async (): Promise<void> => {
    await signal('SIGTERM');
    if (options.cacheDir === undefined) await rm(cacheDir, { recursive: true, force: true });
  };
  return {
    pid: child.pid ?? -1,
    probeAddress,
    webhookAddress,
    uiAddress,
    get logs() {
      return output.parsed();
    },
    exited,
    stop,
    kill: () => signal('SIGKILL'),
    [Symbol.asyncDispose]: stop,
  };
}

const STARTED_MESSAGE = 'syncline started';

/**
 * The operator's standard output, kept as text and split into parsed lines only when `parsed()` is called. Until
 * the 'syncline started' line has come (a handful of lines), each chunk is parsed at once to find it, and
 * `onStarted` gets it.
 */
function collectLogLines(child: ChildProcess, echo: boolean): { onStarted?: (entry: Record<string, unknown>) => void; parsed(): Record<string, unknown>[] } {
  const entries: Record<string, unknown>[] = [];
  let unparsed: string[] = [];
  let ended = false;
  const parsed = (): Record<string, unknown>[] => {
    if (unparsed.length === 0) return entries;
    const text = unparsed.join('');
    const cut = ended ? text.length : text.lastIndexOf('\n') + 1;
    unparsed = cut < text.length ? [text.slice(cut)] : [];
    for (const line of text.slice(0, cut).split('\n')) {
      const trimmed = line.endsWith('\r') ? line.slice(0, -1) : line;
      if (trimmed === '') continue;
      try {
        entries.push(JSON.parse(trimmed) as Record<string, unknown>);
      } catch {
        entries.push({ msg: trimmed });
      }
    }
    return entries;
  };
  const collector: { onStarted?: (entry: Record<string, unknown>) => void; parsed(): Record<string, unknown>[] } = { parsed };
  let started = false;
  const stdout = child.stdout;
  if (stdout === null) return collector;
  stdout.setEncoding('utf8');
  stdout.on('data', (chunk: string) => {
    if (echo) process.stdout.write(chunk);
    unparsed.push(chunk);
    if (started) return;
    const seen = entries.length;
    const entry = parsed()
      .slice(seen)
      .find((e) => e['msg'] === STARTED_MESSAGE);
    if (entry === undefined) return;
    started = true;
    collector.onStarted?.(entry);
  });
  stdout.on('end', () => {
    ended = true;
  });
  return collector;
}
