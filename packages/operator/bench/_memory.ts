// `pnpm bench operator --memory-trace FILE`: where the operator's resident memory goes, phase by phase. The
// operator is started with _memory-sampler.js preloaded, which appends a sample to FILE every 250 ms; this module
// reads them back and tells, for each phase, the sample of its largest RSS split into its parts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

type Sample = {
  readonly t: number;
  readonly rss: number;
  readonly anon: number;
  readonly fileRss: number;
  readonly hwm: number;
  readonly heapTotal: number;
  readonly heapUsed: number;
  readonly external: number;
  readonly arrayBuffers: number;
  /** V8 space name (without `_space`) → [committed, used] bytes. */
  readonly spaces: Record<string, [number, number]>;
};

/** What the operator's process needs to be started with for `file` to receive its samples. */
export function memoryTraceStart(file: string): { nodeArgs: string[]; env: Record<string, string> } {
  return { nodeArgs: [`--import=${join(import.meta.dirname, '_memory-sampler.js')}`], env: { SYNCLINE_BENCH_MEMORY_TRACE: file } };
}

const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);

/** One line: the phase's sample of largest RSS, in MB, split into what holds it. */
function describe(label: string, sample: Sample): string {
  const space = (name: string): string => {
    const s = sample.spaces[name];
    return s === undefined ? '-' : `${mb(s[0])}/${mb(s[1])}`;
  };
  const outside = sample.anon - sample.heapTotal - sample.arrayBuffers;
  return `  ${label.padEnd(26)} RSS ${mb(sample.rss)} (anon ${mb(sample.anon)}, file ${mb(sample.fileRss)}); V8 heap ${mb(sample.heapTotal)} committed / ${mb(sample.heapUsed)} used [new ${space('new')}, old ${space('old')}, code ${space('code')}, large ${space('large_object')}, trusted ${space('trusted')}]; array buffers ${mb(sample.arrayBuffers)}; other anon ${mb(outside)}`;
}

/** Lines for the bench's report: per phase (from `marks`, epoch ms in order), its RSS peak's parts. */
export function memoryTraceReport(file: string, marks: readonly { readonly label: string; readonly at: number }[]): string[] {
  const samples = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Sample);
  const lines = ["memory by phase (MB; V8 spaces committed/used; the sample of the phase's largest RSS, every 250 ms):"];
  for (const [i, mark] of marks.entries()) {
    const end = marks[i + 1]?.at ?? Infinity;
    const inPhase = samples.filter((s) => s.t >= mark.at && s.t < end);
    const peak = inPhase.reduce<Sample | undefined>((best, s) => (best === undefined || s.rss > best.rss ? s : best), undefined);
    if (peak !== undefined) lines.push(describe(mark.label, peak));
  }
  return lines;
}
