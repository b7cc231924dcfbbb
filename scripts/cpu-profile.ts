// `node scripts/cpu-profile.ts PROFILE [--window FILE] [--minus OTHER [--minus-window FILE]] [--top 25]`: where a V8 CPU profile (a .cpuprofile
// written by `node --cpu-prof`, e.g. a bench's --profile) spent its time: self time by function, and total time (the
// function and what it called). A function of a bundle (whitespace minified: a chunk is a few long lines) is named
// with its line and column. --minus OTHER: what PROFILE spent beyond OTHER, function by function (e.g. the notify
// bench's operator with alerts minus the one without, each in its own rounds' windows). --window FILE (JSON `{ "fromUs", "toUs" }` or an array of them, the process's
// monotonic clock in microseconds, as process.hrtime and V8's profile timestamps read it) counts only the
// samples taken in those spans: a bench's steady window, say, out of a profile of the whole run.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

type CallFrame = { functionName: string; url: string; lineNumber: number; columnNumber: number };
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] };
type Profile = { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] };

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { window: { type: 'string' }, minus: { type: 'string' }, 'minus-window': { type: 'string' }, top: { type: 'string', default: '25' } },
});
const file = positionals[0];
if (file === undefined) {
  console.error('usage: node scripts/cpu-profile.ts PROFILE [--window FILE] [--top 25]');
  process.exit(2);
}
type Window = { fromUs: number; toUs: number };
/** The spans counted: one window, or several (a bench's rounds); with none, the whole profile. */
const windowsOf = (file: string | undefined): Window[] =>
  file === undefined ? [{ fromUs: -Infinity, toUs: Infinity }] : [JSON.parse(readFileSync(file, 'utf8')) as Window | Window[]].flat();
const top = Number(values.top);

/** A function as a person finds it: its name and where it is (a bundle's path shortened to its file, and the column). */
const label = (frame: CallFrame): string => {
  const file = frame.url.replace(/^file:\/\/.*\//, '');
  const where = frame.url === '' ? '' : ` ${file}:${frame.lineNumber + 1}${frame.url.endsWith('.mjs') ? `:${frame.columnNumber + 1}` : ''}`;
  return `${frame.functionName === '' ? '(anonymous)' : frame.functionName}${where}`;
};

/** Self and total time (µs) by function over the samples in the window. */
function summarize(path: string, windows: readonly Window[]): { self: Map<string, number>; total: Map<string, number>; sampledUs: number } {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let sampledUs = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    // A sample's delta is the time since the previous one: it is charged to the sampled stack.
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (!windows.some((w) => at >= w.fromUs && at <= w.toUs)) continue;
    const node = byId.get(profile.samples[i] ?? -1);
    if (node === undefined) continue;
    sampledUs += delta;
    const name = label(node.callFrame);
    self.set(name, (self.get(name) ?? 0) + delta);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)?.callFrame;
      if (frame === undefined || frame.functionName === '(root)') continue;
      const key = label(frame);
      if (seen.has(key)) continue; // recursion counts once
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + delta);
    }
  }
  return { self, total, sampledUs };
}

const subtract = (a: Map<string, number>, b: Map<string, number>): Map<string, number> =>
  new Map([...new Set([...a.keys(), ...b.keys()])].map((k) => [k, (a.get(k) ?? 0) - (b.get(k) ?? 0)]));
const main = summarize(file, windowsOf(values.window));
const other = values.minus === undefined ? undefined : summarize(values.minus, windowsOf(values['minus-window']));
const self = other === undefined ? main.self : subtract(main.self, other.self);
const total = other === undefined ? main.total : subtract(main.total, other.total);
const sampledUs = main.sampledUs - (other?.sampledUs ?? 0);
const idle = self.get('(idle)') ?? 0;
const busy = sampledUs - idle;
const ms = (us: number): string => `${(us / 1000).toFixed(0).padStart(7)} ms`;
const share = (us: number): string => `${((us / Math.max(1, busy)) * 100).toFixed(1).padStart(5)}%`;
console.log(
  `${file}${other === undefined ? '' : ` minus ${values.minus ?? ''}`}: ${(sampledUs / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(2)} s not idle (shares below are of that)`,
);
console.log(`\nself time (top ${top}):`);
for (const [name, us] of [...self]
  .filter(([n]) => n !== '(idle)')
  .sort((a, b) => b[1] - a[1])
  .slice(0, top))
  console.log(`${ms(us)} ${share(us)}  ${name}`);
console.log(`\ntotal time, the function and its callees (top ${top}, anonymous and Node's own apart):`);
for (const [name, us] of [...total]
  .filter(([n]) => n !== '(idle)' && n !== '(program)' && !n.startsWith('(anonymous)') && !n.includes(' node:'))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top))
  console.log(`${ms(us)} ${share(us)}  ${name}`);
