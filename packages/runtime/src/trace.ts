// An opt-in wall-clock trace of where reconciles spend their time, for the operator bench: with the environment
// variable SYNCLINE_TRACE set to a file, the work queue, the reconcile shell (a stored finalizer), the ConfigSync
// reconciler, the webhook receiver and the Git source append one line per step (`<epoch ms> <key> <step>`) to it,
// flushed every half second. Unset (the default, and what the image runs), `trace` is a function that does nothing:
// no line is built, no timer runs.
import { appendFileSync } from 'node:fs';

/** Records that `key` (a reconcile's key, a repository, a webhook delivery) reached `step` now. */
export type Trace = (key: string, step: string) => void;

function createTrace(file: string | undefined): Trace {
  if (file === undefined || file === '') return () => undefined;
  let lines: string[] = [];
  const flush = (): void => {
    if (lines.length === 0) return;
    const text = lines.join('');
    lines = [];
    try {
      appendFileSync(file, text);
    } catch {
      // A debugging aid: a file that cannot be written loses the trace, never the operator.
    }
  };
  setInterval(flush, 500).unref();
  process.once('exit', flush);
  return (key, step) => {
    lines.push(`${(performance.timeOrigin + performance.now()).toFixed(1)} ${key} ${step}\n`);
  };
}

/** The process's trace (see the file's head). */
export const trace: Trace = createTrace(process.env['SYNCLINE_TRACE']);
