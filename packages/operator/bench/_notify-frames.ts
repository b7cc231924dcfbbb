// The CPU the notifications' own frames take in an operator's CPU profile, round by round (the notify bench).
// V8 samples the main thread about every interval while it runs: a round's samples in the notifications' frames,
// over all its samples but `(idle)`, times the main thread's CPU in the round (/proc), is the CPU those frames took.
// Checked: a bundle whose Event tap spins ~1.1 ms of CPU per notification (200 per commit, ~230 ms) read ~240 ms
// more per commit this way, batched and one request per event alike (the samples' own time spans, a wall clock,
// read 340-380 ms more: a thread made to wait for a core sends its time to wherever it stopped).
// Its bias: when the thread waits for a core, the one sample taken when it runs again lands where it stopped, and a
// write that wakes another process on this machine (a local receiver) stops it more often than the rest of the
// code does: one request per event reads high (an upper reading). Leaving out the samples taken after such a wait
// gives the lower reading, `settled` below, biased the other way (long runs of CPU keep more of their samples).
//
// What "the notifications' frames" count: every sample whose stack holds a function of the notifications' chunk
// (packages/notify: the Event tap, matching, rendering, the dispatcher, the transport it calls, what those call:
// JSON, crypto, timers, a socket's write), except beneath the tap's `record` when the frame nearest the sample is
// the Event recorder's (Events are recorded with or without notifications); and every sample in Node's HTTP
// client that no other code of the bundle called (its callbacks: a request handed its socket on the next tick, an
// answer's parsing). The operator's only other HTTP client requests are the Git source's, the same with and
// without alerts: the bench subtracts the operator without alerts in the same round.
// Apart: undici's HTTP parser's own work (a sample whose nearest frame with a source is its socket reader, its
// WebAssembly llhttp or the functions that pass what it reads on, not the handler they call): the REST client's answers and, with the receivers' pools, the notifications' answers go
// through it alike, so only the difference from the operator without alerts in the same round is the
// notifications' (the bench adds it to the figure: its noise is the sampling's, a few samples a round).
// What none of it can count: the garbage collector (a profile does not say whose allocations it collects; the
// bench prints an estimate in proportion to JavaScript time beside the figure, not in it) and V8's and libuv's
// helper threads.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

type CallFrame = { functionName: string; url: string };
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] };
type CpuProfile = { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] };

export type Window = { readonly fromUs: number; readonly toUs: number };

/** A round's samples that count (taken while the thread ran), by where they fell. */
export type RoundSamples = {
  /** The notifications' frames: their chunk's code and what it calls. */
  readonly own: number;
  /** Node's HTTP client, not beneath any code of the bundle (its callbacks). */
  readonly http: number;
  /** undici's parser's own work, not beneath the notifications' frames (whoever's answer it reads). */
  readonly parser: number;
  readonly gc: number;
  /** `(program)`: native code V8 does not attribute. */
  readonly program: number;
  /** Every sample but `(idle)`. */
  readonly busy: number;
  /** The lower reading: `own + http` and `busy` of the samples taken one interval (at most 1.5) after the one before. */
  readonly settled: { readonly frames: number; readonly busy: number };
};

const HTTP_CLIENT = /^node:_http_(client|common|agent|outgoing)$/;
/** undici's socket reader and parser: its llhttp (WebAssembly) and the functions that pass what it reads on. */
const UNDICI_PARSER =
  /^(onHttpSocketData|readMore|execute|wasm_on_\w+|on(HeadersComplete|MessageComplete|MessageBegin|Body|Status|HeaderField|HeaderValue|UpgradeOrMessage)|wasm-function\[\d+\])$/;

/** The samples of each window in `file`, classified; `ownChunks` are the bundle's files that hold the notifications' code. */
export function notificationSamples(file: string, windows: readonly Window[], bundleDir: string, ownChunks: readonly string[]): RoundSamples[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const isOwn = (node: ProfileNode): boolean => ownChunks.some((chunk) => node.callFrame.url.endsWith(`/${chunk}`));
  type Kind = 'own' | 'http' | 'parser' | 'gc' | 'program' | 'idle' | 'other';
  const classes = new Map<number, Kind>();
  const classify = (leaf: number): Kind => {
    const known = classes.get(leaf);
    if (known !== undefined) return known;
    const name = byId.get(leaf)?.callFrame.functionName;
    let found: Kind = name === '(idle)' ? 'idle' : name === '(garbage collector)' ? 'gc' : name === '(program)' ? 'program' : 'other';
    if (found === 'other') {
      let nearestBundleFrameIsOwn: boolean | undefined;
      let http = false;
      let calledByBundle = false;
      // The parser's own work: the first frame of the sample's that has a source is undici's parser's.
      let parser: boolean | undefined;
      for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
        const node = byId.get(id);
        if (node === undefined) break;
        const inBundle = node.callFrame.url.includes(bundleDir);
        if (inBundle && nearestBundleFrameIsOwn === undefined) nearestBundleFrameIsOwn = isOwn(node);
        if (isOwn(node)) {
          found = node.callFrame.functionName !== 'record' || nearestBundleFrameIsOwn === true ? 'own' : 'other';
          break;
        }
        if (parser === undefined && node.callFrame.url !== '')
          parser = UNDICI_PARSER.test(node.callFrame.functionName) || node.callFrame.url.startsWith('wasm://');
        if (HTTP_CLIENT.test(node.callFrame.url)) http = true;
        // A bundle frame beneath Node's client is its callback (the transport's answer handler); one above it called it.
        else if (inBundle && http) calledByBundle = true;
      }
      if (found === 'other' && http && !calledByBundle) found = 'http';
      else if (found === 'other' && parser === true) found = 'parser';
    }
    classes.set(leaf, found);
    return found;
  };
  const interval = median(profile.timeDeltas.slice(1));
  const rounds = windows.map(() => ({ own: 0, http: 0, parser: 0, gc: 0, program: 0, busy: 0, settled: { frames: 0, busy: 0 } }));
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    const round = rounds[windows.findIndex((w) => at >= w.fromUs && at <= w.toUs)];
    if (round === undefined) continue;
    const kind = classify(profile.samples[i] ?? -1);
    if (kind === 'idle') continue;
    round.busy++;
    if (kind !== 'other') round[kind]++;
    // Not taken after a wait for a core.
    if ((profile.timeDeltas[i] ?? Infinity) > 1.5 * interval) continue;
    round.settled.busy++;
    if (kind === 'own' || kind === 'http') round.settled.frames++;
  }
  return rounds;
}

/** The bundle's files that hold the notifications' code (packages/notify: it defines startNotifications). */
export function notificationChunks(bundleDir: string): string[] {
  return readdirSync(bundleDir).filter((f) => f.endsWith('.mjs') && readFileSync(join(bundleDir, f), 'utf8').includes('function startNotifications('));
}

/** The CPU profile `--cpu-prof` wrote in `dir` for process `pid`, if any. */
export function profileIn(dir: string, pid: number): string | undefined {
  const name = readdirSync(dir).find((f) => f.endsWith('.cpuprofile') && f.includes(`.${pid}.`));
  return name === undefined ? undefined : join(dir, name);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}
