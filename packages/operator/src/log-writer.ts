// Where the operator's log lines go: a file descriptor (standard output), written in batches from the event loop's
// own thread, never blocking it.
//
// Why not pino's own `pino.destination({ sync: false })` (SonicBoom): it hands every line to libuv's thread pool as
// its own fs.write, so each line costs a worker thread's wake-up and a completion callback, and a worker thread sits
// in write() whenever the reader of a blocking pipe stops reading. Here the lines of a short span are joined and
// written with one non-blocking write() on the calling thread; a full pipe answers EAGAIN at once, and the lines
// wait in memory, up to a bound, until it takes them.
import { writeSync } from 'node:fs';

export type LineWriterOptions = {
  /** Where to write: a pipe or socket should be in non-blocking mode (see `standardOutputWriter`); a file or a TTY is written as it is. */
  readonly fd: number;
  /** How long a line waits for the ones logged after it, to be written together. */
  readonly delayMs?: number;
  /** Lines waiting (UTF-16 code units) that are written at once, without waiting for `delayMs`: a burst. */
  readonly batchChars?: number;
  /** How long to wait before writing again after the reader stopped taking lines (EAGAIN). */
  readonly retryMs?: number;
  /** What may wait unwritten (UTF-16 code units, ~bytes for log lines) while the reader does not read; lines beyond it are dropped and counted. */
  readonly maxPendingChars?: number;
  /** Called, once the reader takes lines again, with how many were dropped meanwhile (to log that it happened). */
  readonly onDropped?: (count: number) => void;
};

export type LineWriter = {
  write(line: string): void;
  /**
   * Writes everything waiting now, on this thread, waiting for a full reader up to `timeoutMs`: at exit, when no
   * later turn of the event loop will. Returns whether everything was written.
   */
  flushSync(timeoutMs: number): boolean;
  /** Lines dropped so far because the reader did not keep up (or had gone: then a batch it did not take counts once). */
  readonly dropped: number;
};

const DEFAULT_DELAY_MS = 20;
const DEFAULT_RETRY_MS = 50;
/** A pipe's capacity on Linux: a larger batch would only be written in parts. */
const DEFAULT_BATCH_CHARS = 64 * 1024;
/** About 3,000 lines of a reconcile's size: enough for a reader's pause, small beside the operator's memory. */
const DEFAULT_MAX_PENDING_CHARS = 1024 * 1024;
const WriteStatus = { written: 'written', blocked: 'blocked' } as const;
type WriteStatus = (typeof WriteStatus)[keyof typeof WriteStatus];

export function createLineWriter(options: LineWriterOptions): LineWriter {
  const delayMs = options.delayMs ?? DEFAULT_DELAY_MS;
  const retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
  const maxPending = options.maxPendingChars ?? DEFAULT_MAX_PENDING_CHARS;
  const batchChars = options.batchChars ?? DEFAULT_BATCH_CHARS;
  let lines: string[] = [];
  let linesChars = 0;
  /** The part of the last batch the reader has not taken yet: written before any newer line. */
  let rest: Buffer | undefined;
  let timer: NodeJS.Timeout | undefined;
  /** The reader is gone (EPIPE) or the descriptor is unusable: nothing more can be written. */
  let closed = false;
  let dropped = 0;
  let droppedUntold = 0;

  const writeWaiting = (): WriteStatus => {
    for (;;) {
      if (rest === undefined) {
        if (lines.length === 0) return WriteStatus.written;
        rest = Buffer.from(lines.length === 1 ? (lines[0] ?? '') : lines.join(''));
        lines = [];
        linesChars = 0;
      }
      try {
        const taken = writeSync(options.fd, rest);
        rest = taken >= rest.length ? undefined : rest.subarray(taken);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return WriteStatus.blocked;
        // EPIPE (the reader is gone) or a descriptor that cannot be written: there is nowhere left to log to.
        closed = true;
        dropped += lines.length + (rest === undefined ? 0 : 1);
        lines = [];
        linesChars = 0;
        rest = undefined;
        return WriteStatus.written;
      }
    }
  };
  const tellDropped = (): void => {
    if (droppedUntold === 0 || closed) return;
    const count = droppedUntold;
    droppedUntold = 0;
    options.onDropped?.(count);
  };
  /** Writes what waits; while the reader is full, tries again `retryMs` later. */
  const writeNow = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const status = writeWaiting();
    if (status === WriteStatus.blocked) schedule(retryMs);
    else tellDropped();
  };
  const schedule = (ms: number): void => {
    // Unreferenced: a pending batch does not keep the process alive; the exit hook writes it.
    timer = setTimeout(writeNow, ms);
    timer.unref();
  };
  return {
    write(line) {
      if (closed) return;
      if (linesChars + (rest?.length ?? 0) + line.length > maxPending) {
        dropped++;
        droppedUntold++;
        return;
      }
      lines.push(line);
      linesChars += line.length;
      // A burst is written at once unless the reader is full already (then `rest` waits for the retry).
      if (linesChars >= batchChars && rest === undefined) writeNow();
      else if (timer === undefined) schedule(delayMs);
    },
    flushSync(timeoutMs) {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      const deadline = performance.now() + timeoutMs;
      const pause = new Int32Array(new SharedArrayBuffer(4));
      // Twice at most: the second time for the line that says how many were dropped.
      for (let pass = 0; pass < 2; pass++) {
        while (writeWaiting() === WriteStatus.blocked) {
          if (performance.now() >= deadline) return false;
          Atomics.wait(pause, 0, 0, 5);
        }
        if (droppedUntold === 0) break;
        tellDropped();
      }
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      return true;
    },
    get dropped() {
      return dropped;
    },
  };
}

/**
 * The process's standard output as a LineWriter whose waiting lines are written when the process exits (a return
 * from main, process.exit after SIGTERM, an uncaught exception; only SIGKILL or a fatal V8 error loses the last
 * `delayMs` of lines; a reader that does not read holds the exit at most `exitTimeoutMs`, 2 s). Reading `process.stdout` first makes Node open fd 1 as a libuv stream, which puts a pipe or
 * socket in non-blocking mode: a reader that stops reading then answers EAGAIN rather than blocking the operator.
 */
export function standardOutputWriter(options: Omit<LineWriterOptions, 'fd'> & { readonly exitTimeoutMs?: number } = {}): LineWriter {
  const writer = createLineWriter({ ...options, fd: process.stdout.fd });
  process.once('exit', () => writer.flushSync(options.exitTimeoutMs ?? 2000));
  return writer;
}
