// What a V8 CPU profile (`node --cpu-prof`, the operator bench's --profile) says about a span of time: the
// functions that held the CPU (self time, by function and file:line) and how much of the span the process
// was busy at all (sampled time outside `(idle)`). The profile's timestamps are V8's monotonic clock in
// microseconds, the clock process.hrtime reads in this process too, so a bench marks its phases with
// `monotonicMicros()` and slices the operator's profile by them.
// `node packages/operator/bench/_profile.ts FILE [TOP]` prints the whole profile's top functions.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

type ProfileNode = { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }; children?: number[] };
type CpuProfile = { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] };

/** Now on the clock V8's profiler stamps samples with (CLOCK_MONOTONIC), in microseconds. */
export function monotonicMicros(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

export type ProfileSpan = {
  /** Wall time of the span, in ms. */
  readonly wallMs: number;
  /** Sampled time in JavaScript, the garbage collector and native code (everything but `(idle)`), in ms. */
  readonly busyMs: number;
  /** Functions by self time, most first: `name file:line`, ms. */
  readonly top: readonly { readonly frame: string; readonly selfMs: number }[];
};

/** The busy time and top self-time functions of `file`'s samples between `fromUs` and `toUs` (monotonicMicros). */
export function profileSpan(file: string, fromUs = -Infinity, toUs = Infinity, top = 15): ProfileSpan {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const frames = new Map<number, string>();
  const root = process.cwd();
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    // The bundle's lines are long (whitespace minified): the column finds the function.
    const where = url === '' ? '' : ` ${relative(root, url.replace(/^file:\/\//, ''))}:${lineNumber + 1}:${columnNumber + 1}`;
    frames.set(node.id, `${functionName === '' ? '(anonymous)' : functionName}${where}`);
  }
  const self = new Map<string, number>();
  let busyUs = 0;
  let at = profile.startTime;
  const from = Math.max(fromUs, profile.startTime);
  const to = Math.min(toUs, profile.endTime);
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (at < from || at > to) continue;
    // A sample stands for the time until the next one.
    const span = profile.timeDeltas[i + 1] ?? 0;
    const frame = frames.get(profile.samples[i] as number) ?? '?';
    if (frame.startsWith('(idle)')) continue;
    busyUs += span;
    self.set(frame, (self.get(frame) ?? 0) + span);
  }
  const ranked = [...self].sort((a, b) => b[1] - a[1]).slice(0, top);
  return { wallMs: Math.max(0, to - from) / 1000, busyMs: busyUs / 1000, top: ranked.map(([frame, us]) => ({ frame, selfMs: us / 1000 })) };
}

/** A span as report lines: busy over wall, then the functions. */
export function formatSpan(name: string, span: ProfileSpan): string[] {
  const share = span.wallMs > 0 ? ` (${((span.busyMs / span.wallMs) * 100).toFixed(0)} % of the wall time)` : '';
  return [
    `${name}: operator busy ${(span.busyMs / 1000).toFixed(2)} s of ${(span.wallMs / 1000).toFixed(2)} s${share}; top self time:`,
    ...span.top.map(({ frame, selfMs }) => `  ${selfMs.toFixed(0).padStart(6)} ms  ${frame}`),
  ];
}

if (import.meta.main) {
  const file = process.argv[2];
  if (file === undefined) throw new Error('usage: node packages/operator/bench/_profile.ts FILE.cpuprofile [TOP]');
  for (const line of formatSpan(file, profileSpan(file, -Infinity, Infinity, Number(process.argv[3] ?? 30)))) console.log(line);
}

/**
 * Wall against CPU over a phase: every `everyMs` the CPU seconds each process has used so far (and a count the
 * bench keeps, e.g. syncs Ready), so a phase reads as slices: where the API server was idle, waiting on the
 * operator, and where the operator was.
 */
export function cpuTimeline(processes: Record<string, () => number>, count: () => number, everyMs = 250): { stop(): string[] } {
  const names = Object.keys(processes);
  const read = (): { at: number; cpu: number[]; count: number } => ({ at: Date.now(), cpu: names.map((n) => processes[n]?.() ?? 0), count: count() });
  const samples = [read()];
  const timer = setInterval(() => samples.push(read()), everyMs);
  return {
    stop() {
      clearInterval(timer);
      samples.push(read());
      const first = samples[0] as (typeof samples)[number];
      const last = samples[samples.length - 1] as (typeof samples)[number];
      const slices = 10;
      const lines = [`  slice (wall)      ${names.map((n) => `${n} CPU`.padStart(20)).join('')}   count`];
      for (let s = 0; s < slices; s++) {
        const from = first.at + ((last.at - first.at) * s) / slices;
        const to = first.at + ((last.at - first.at) * (s + 1)) / slices;
        const a = samples.findLast((x) => x.at <= from) ?? first;
        const b = samples.find((x) => x.at >= to) ?? last;
        const wall = (b.at - a.at) / 1000;
        const cells = names.map((_, i) => `${((((b.cpu[i] ?? 0) - (a.cpu[i] ?? 0)) / Math.max(wall, 0.001)) * 100).toFixed(0)} % of a core`.padStart(20));
        lines.push(`  ${((from - first.at) / 1000).toFixed(1).padStart(6)}–${((to - first.at) / 1000).toFixed(1).padEnd(6)} s ${cells.join('')}   ${b.count}`);
      }
      return lines;
    },
  };
}

/**
 * The share of a span during which some runnable task waited for a CPU (Linux's pressure stall information,
 * /proc/pressure/cpu "some"): near 0 on a machine the bench has to itself; on a shared one, the part of the
 * wall time no code of ours decides. Undefined where the kernel does not report it.
 */
export function cpuPressure(): { stop(): number | undefined } {
  const read = (): number | undefined => {
    try {
      const some = readFileSync('/proc/pressure/cpu', 'utf8')
        .split('\n')
        .find((line) => line.startsWith('some '));
      const total = /total=(\d+)/.exec(some ?? '')?.[1];
      return total === undefined ? undefined : Number(total);
    } catch {
      return undefined;
    }
  };
  const from = read();
  const started = process.hrtime.bigint();
  return {
    stop() {
      const to = read();
      const wallUs = Number((process.hrtime.bigint() - started) / 1000n);
      return from === undefined || to === undefined || wallUs === 0 ? undefined : (to - from) / wallUs;
    },
  };
}
