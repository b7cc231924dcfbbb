// The render process (packages/render/engine, built from the official Kustomize, Helm and Jsonnet Go modules):
// started on first use, one request at a time, each answered within its limits. A render that overruns its
// time, its memory or its output is killed with the process; the next request starts a fresh one, so one bad
// repository never stops the renders of every other sync.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

export const EngineName = { Kustomize: 'kustomize', Helm: 'helm', Jsonnet: 'jsonnet' } as const;
export type EngineName = (typeof EngineName)[keyof typeof EngineName];

export interface EngineLimits {
  /** Wall time of one render. */
  readonly timeoutMs: number;
  /** Heap of the render process; past it the process ends and the render fails. */
  readonly memoryBytes: number;
  /** JSON bytes of one render's objects. */
  readonly maxOutputBytes: number;
}

export const defaultEngineLimits: EngineLimits = { timeoutMs: 30_000, memoryBytes: 512 * 1024 * 1024, maxOutputBytes: 64 * 1024 * 1024 };

/** One file the engine may read: a repo-relative path and its bytes. */
export interface EngineFile {
  readonly path: string;
  readonly content: Uint8Array | string;
}

export interface EngineRequest {
  readonly engine: EngineName;
  readonly files: readonly EngineFile[];
  /** The engine's own input (see packages/render/engine: KustomizeInput, HelmInput, JsonnetInput). */
  readonly input: Readonly<Record<string, unknown>>;
  /** A request that is no render: `chartVersion` asks which published chart version Helm would pick. */
  readonly operation?: 'chartVersion';
}

/** A rendered object and the file the engine says it came from. */
export interface EngineObject {
  readonly source?: string;
  readonly object: unknown;
}

/** Why the engine did not render: a closed set, each cause with its own handling by the caller. */
export const EngineFailureKind = {
  /** The input is wrong (a template error, a missing file): fixed in the repository. */
  Invalid: 'invalid',
  /** The input asks for what a render may not do: the network, a program, a file outside the repository. */
  Refused: 'refused',
  /** The render hit a limit (time, memory, output): it was stopped. */
  Limit: 'limit',
  /** The render process could not run (missing binary, crash): transient. */
  Unavailable: 'unavailable',
} as const;
export type EngineFailureKind = (typeof EngineFailureKind)[keyof typeof EngineFailureKind];

export class EngineFailure extends Error {
  override readonly name = 'EngineFailure';
  readonly kind: EngineFailureKind;
  readonly engine: EngineName;

  constructor(kind: EngineFailureKind, engine: EngineName, message: string) {
    super(message);
    this.kind = kind;
    this.engine = engine;
  }
}

type Pending = { readonly engine: EngineName; readonly resolve: (objects: EngineObject[]) => void; readonly reject: (error: Error) => void };

type Child = ChildProcessByStdio<Writable, Readable, Readable>;

export interface RenderEngineOptions {
  /** Path of the syncline-render binary. */
  readonly binary: string;
  readonly limits?: Partial<EngineLimits>;
}

/** Statistics for tests and metrics. */
export interface RenderEngineStats {
  /** Processes started so far (1 after the first render; +1 after each kill or crash). */
  readonly starts: number;
  readonly renders: number;
}

export class RenderEngine {
  readonly #binary: string;
  readonly limits: EngineLimits;
  #child: Child | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #starts = 0;
  #renders = 0;

  constructor(options: RenderEngineOptions) {
    this.#binary = options.binary;
    this.limits = { ...defaultEngineLimits, ...options.limits };
  }

  /** The render process's pid while it runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get stats(): RenderEngineStats {
    return { starts: this.#starts, renders: this.#renders };
  }

  /** Renders one request once those before it are done. */
  render(request: EngineRequest, limits: Partial<EngineLimits> = {}): Promise<EngineObject[]> {
    const run = this.#queue.then(
      () => this.#renderNow(request, { ...this.limits, ...limits }),
      () => this.#renderNow(request, { ...this.limits, ...limits }),
    );
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Which of a chart's published versions Helm picks for `version` (an exact version, a semver range, or empty
   * for the newest release), by Helm's own semver library in the render process: an exact match first, then
   * the newest version the range admits. An Invalid EngineFailure when none does.
   */
  async chooseChartVersion(versions: readonly string[], version: string): Promise<string> {
    const [answer] = await this.render({ engine: EngineName.Helm, operation: 'chartVersion', files: [], input: { versions, version } });
    const chosen = (answer?.object as { version?: unknown } | undefined)?.version;
    if (typeof chosen !== 'string') throw new EngineFailure(EngineFailureKind.Unavailable, EngineName.Helm, 'helm: the render process gave no chart version');
    return chosen;
  }

  /** Ends the process (a later render starts another). */
  close(): void {
    this.#child?.kill('SIGKILL');
    this.#child = undefined;
  }

  #start(limits: EngineLimits): Child {
    const child = spawn(this.#binary, [], {
      stdio: ['pipe', 'pipe', 'pipe'],
      // Nothing from the operator's environment: no credentials, no proxies, no PATH to find programs on.
      env: { SYNCLINE_RENDER_MEMORY_LIMIT: String(limits.memoryBytes), GOMEMLIMIT: String(limits.memoryBytes), GOGC: '200', HOME: '/nonexistent' },
    });
    child.stdin.on('error', () => undefined);
    // An idle render process never holds its parent open; a render in flight does (its timer).
    child.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr] as unknown as { unref?: () => void }[]) stream.unref?.();
    this.#starts++;
    return child;
  }

  #renderNow(request: EngineRequest, limits: EngineLimits): Promise<EngineObject[]> {
    this.#renders++;
    const child = (this.#child ??= this.#start(limits));
    return new Promise<EngineObject[]>((resolve, reject) => {
      const pending: Pending = { engine: request.engine, resolve, reject };
      let settled = false;
      let stderr = '';
      const chunks: Buffer[] = [];
      let received = 0;
      const maxFrame = limits.maxOutputBytes * 2 + 1024 * 1024;
      const finish = (error: Error | undefined, objects?: EngineObject[]): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.stderr.off('data', onStderr);
        child.off('exit', onExit);
        child.off('error', onError);
        if (error !== undefined) pending.reject(error);
        else pending.resolve(objects ?? []);
      };
      const kill = (failure: EngineFailure): void => {
        if (this.#child === child) this.#child = undefined;
        child.kill('SIGKILL');
        finish(failure);
      };
      const timer = setTimeout(
        () =>
          kill(
            new EngineFailure(
              EngineFailureKind.Limit,
              request.engine,
              `${request.engine}: the render did not finish within the time limit of ${limits.timeoutMs / 1000}s and was stopped`,
            ),
          ),
        limits.timeoutMs,
      );
      const onData = (chunk: Buffer): void => {
        chunks.push(chunk);
        received += chunk.length;
        if (received < 4) return;
        const head = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        const size = head.readUInt32BE(0);
        if (size > maxFrame) {
          kill(
            new EngineFailure(
              EngineFailureKind.Limit,
              request.engine,
              `${request.engine}: the output is over the limit of ${limits.maxOutputBytes} bytes; the render was stopped`,
            ),
          );
          return;
        }
        if (received < 4 + size) return;
        try {
          finish(undefined, parseResponse(request.engine, head.subarray(4, 4 + size)));
        } catch (error) {
          finish(error instanceof Error ? error : new Error(String(error)));
        }
      };
      const onStderr = (chunk: Buffer): void => {
        if (stderr.length < 4096) stderr += chunk.toString('utf8');
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (this.#child === child) this.#child = undefined;
        if (code === 3) {
          finish(
            new EngineFailure(
              EngineFailureKind.Limit,
              request.engine,
              `${request.engine}: the render used more than the memory limit of ${Math.round(limits.memoryBytes / 1024 / 1024)} MiB and was stopped`,
            ),
          );
          return;
        }
        finish(
          new EngineFailure(
            EngineFailureKind.Unavailable,
            request.engine,
            `${request.engine}: the render process ended (${signal ?? `exit ${code}`})${stderr === '' ? '' : `: ${stderr.trim().split('\n').slice(-3).join(' ')}`}`,
          ),
        );
      };
      const onError = (error: Error): void => {
        if (this.#child === child) this.#child = undefined;
        finish(new EngineFailure(EngineFailureKind.Unavailable, request.engine, `${request.engine}: the render process cannot run: ${error.message}`));
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onStderr);
      child.once('exit', onExit);
      child.once('error', onError);
      try {
        child.stdin.write(encodeRequest(request, limits));
      } catch (error) {
        kill(
          new EngineFailure(
            EngineFailureKind.Unavailable,
            request.engine,
            `${request.engine}: sending the request failed: ${error instanceof Error ? error.message : String(error)}`,
          ),
        );
      }
    });
  }
}

function encodeRequest(request: EngineRequest, limits: EngineLimits): Buffer {
  const body = Buffer.from(
    JSON.stringify({
      engine: request.operation ?? request.engine,
      files: request.files.map((file) => ({
        path: file.path,
        data: (typeof file.content === 'string'
          ? Buffer.from(file.content, 'utf8')
          : Buffer.from(file.content.buffer, file.content.byteOffset, file.content.byteLength)
        ).toString('base64'),
      })),
      [request.operation ?? request.engine]: request.input,
      maxOutputBytes: limits.maxOutputBytes,
    }),
    'utf8',
  );
  const header = Buffer.alloc(4);
  header.writeUInt32BE(body.length, 0);
  return Buffer.concat([header, body]);
}

type Response = { objects?: { source?: string; object: unknown }[]; error?: { kind: string; message: string } };

function parseResponse(engine: EngineName, body: Buffer): EngineObject[] {
  const response = JSON.parse(body.toString('utf8')) as Response;
  if (response.error !== undefined) {
    const kind = Object.values(EngineFailureKind).find((k) => k === response.error?.kind) ?? EngineFailureKind.Invalid;
    throw new EngineFailure(kind, engine, response.error.message);
  }
  return response.objects ?? [];
}
