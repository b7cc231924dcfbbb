// --trace FILE: the operator writes a wall-clock trace of its reconciles (SYNCLINE_TRACE, packages/runtime's
// trace.ts): queued, started, finalizer stored (a new sync's first run), source resolved, commit fetched, rendered,
// applied, ended. Read here per phase: where each run's wall time went (waiting for a worker, the finalizer's patch,
// the ref listing, the fetch, the render, the applies, the status write), and by tenths of the phase how many runs
// were in each step and which Git requests the server saw: a tenth with few runs in flight and idle processes is a
// gap in the pipeline, not work.
import { readFileSync } from 'node:fs';

const STEPS = ['wait', 'finalizer', 'resolve', 'fetch', 'render', 'apply', 'finish'] as const;
type Step = (typeof STEPS)[number];
/** The marker that ends each step (a step starts where the previous one ended; the finalizer's, at the run's start). */
const ENDS: Record<Step, string> = {
  wait: 'start',
  finalizer: 'finalized',
  resolve: 'resolved',
  fetch: 'fetched',
  render: 'rendered',
  apply: 'applied',
  finish: 'end',
};

type Mark = { readonly at: number; readonly key: string; readonly step: string };
type Run = { readonly key: string; readonly spans: Partial<Record<Step, readonly [number, number]>>; readonly from: number; readonly to: number };

export function readTrace(file: string): Mark[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [at, key, step] = line.split(' ');
      return { at: Number(at), key: key ?? '', step: step ?? '' };
    });
}

/** Each run that started inside [from, to], its steps' spans (those its markers show). */
function runsIn(marks: readonly Mark[], from: number, to: number): Run[] {
  const byKey = new Map<string, Mark[]>();
  for (const mark of marks) byKey.set(mark.key, [...(byKey.get(mark.key) ?? []), mark]);
  const runs: Run[] = [];
  for (const [key, list] of byKey) {
    let queuedAt: number | undefined;
    let current: { start: number; last: number; spans: Partial<Record<Step, readonly [number, number]>> } | undefined;
    for (const mark of list) {
      if (mark.step === 'queued') queuedAt = mark.at;
      else if (mark.step === 'start') {
        current = { start: mark.at, last: mark.at, spans: {} };
        if (queuedAt !== undefined && queuedAt >= from) current.spans.wait = [queuedAt, mark.at];
        queuedAt = undefined;
      } else if (current !== undefined) {
        const step = STEPS.find((s) => ENDS[s] === mark.step || (s === 'finish' && mark.step.startsWith('end:')));
        if (step === undefined) continue;
        // A new sync's finalizer is stored alongside its first steps (from its start), not between two of them.
        if (step === 'finalizer') {
          current.spans.finalizer = [current.start, mark.at];
          continue;
        }
        current.spans[step] = [current.last, mark.at];
        current.last = mark.at;
        if (step === 'finish') {
          if (current.start >= from && current.start <= to)
            runs.push({ key, spans: current.spans, from: current.spans.wait?.[0] ?? current.start, to: mark.at });
          current = undefined;
        }
      }
    }
  }
  return runs;
}

const quantile = (values: readonly number[], q: number): number => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};

/** The report of one phase: per-step medians, and per tenth the runs in each step and the Git requests. */
export function traceReport(input: {
  label: string;
  marks: readonly Mark[];
  from: number;
  to: number;
  gitRequests: readonly { at: number; what: string }[];
}): string[] {
  const { from, to } = input;
  const runs = runsIn(input.marks, from, to);
  const ms = (value: number): string => `${value.toFixed(0)}`.padStart(6);
  const lines = [
    `wall-clock trace, ${input.label}: ${runs.length} runs; the first started at +${((Math.min(...runs.map((r) => r.spans.wait?.[1] ?? r.from)) - from) / 1000).toFixed(2)} s`,
  ];
  const other = input.marks.filter((m) => m.at >= from && m.at <= to && m.step.startsWith('webhook'));
  for (const mark of other) lines.push(`  ${mark.step} at +${((mark.at - from) / 1000).toFixed(3)} s`);
  lines.push(`  per run (ms):      ${STEPS.map((s) => s.padStart(8)).join('')}   total`);
  for (const [name, q] of [
    ['median', 0.5],
    ['p90', 0.9],
  ] as const) {
    const cells = STEPS.map((s) =>
      ms(
        quantile(
          runs.flatMap((r) => (r.spans[s] === undefined ? [] : [r.spans[s][1] - r.spans[s][0]])),
          q,
        ),
      ).padStart(8),
    );
    lines.push(
      `  ${name.padEnd(18)} ${cells.join('')}  ${ms(
        quantile(
          runs.map((r) => r.to - r.from),
          q,
        ),
      )}`,
    );
  }
  const slices = 10;
  lines.push(`  by tenths, runs in each step (mean over the tenth) | runs started | Git requests`);
  lines.push(`  slice (s)    ${STEPS.map((s) => s.padStart(8)).join('')}  started  git`);
  for (let i = 0; i < slices; i++) {
    const a = from + ((to - from) * i) / slices;
    const b = from + ((to - from) * (i + 1)) / slices;
    const occupancy = STEPS.map(
      (s) => runs.reduce((n, r) => n + Math.max(0, Math.min(b, r.spans[s]?.[1] ?? 0) - Math.max(a, r.spans[s]?.[0] ?? 0)), 0) / (b - a),
    );
    const started = runs.filter((r) => (r.spans.wait?.[1] ?? r.from) >= a && (r.spans.wait?.[1] ?? r.from) < b).length;
    const git = input.gitRequests.filter((g) => g.at >= a && g.at < b).map((g) => `${g.what}@+${((g.at - from) / 1000).toFixed(2)}`);
    lines.push(
      `  ${((a - from) / 1000).toFixed(2).padStart(5)}–${((b - from) / 1000).toFixed(2).padEnd(5)} ${occupancy.map((o) => o.toFixed(1).padStart(8)).join('')}  ${String(started).padStart(7)}  ${git.join(' ')}`,
    );
  }
  return lines;
}
