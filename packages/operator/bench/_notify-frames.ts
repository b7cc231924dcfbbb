// The CPU the notifications' own frames take in an operator's CPU profile, round by round (the notify bench).
// V8 samples the main thread about every interval while it runs. When the thread had to wait for a core, the one
// sample taken when it runs again lands where it stopped, whatever it was doing: and a socket write that wakes
// another process on this machine (the bench's receiver, the API server) stops it far more often than the rest of
// the code does (every request's write would read as a sample). So the figure counts only the samples taken one
// interval (at most 1.5) after the one before, while the thread ran: a round's share of those in the frames below,
// times the main thread's CPU in the round (/proc), is the CPU the frames took (`settled`). Counting every sample
// instead (`all`) reads the writes high: an upper reading, printed beside it.
// Checked: a bundle whose Event tap spins ~1.1 ms of CPU per notification (200 per commit, ~230 ms in all) read
// 180-210 ms more per commit this way (190-220 ms counting every sample; summing the samples' own time spans, a
// wall clock, read 340-380 ms more): the figure may miss a fifth of a long stretch of CPU, it does not invent any.
//
// What "the notifications' frames" count: every sample whose stack holds a function of the notifications' chunk
// (packages/notify: the Event tap, matching, rendering, the dispatcher, the transport it calls, what those call:
// JSON, crypto, timers, a socket's write), except beneath the tap's `record` when the frame nearest the sample is
// the Event recorder's (Events are recorded with or without notifications); and every sample in Node's HTTP
// client that no other code of the bundle called (its callbacks: a request handed its socket on the next tick, an
// answer's parsing; the Git source's requests are the same with and without alerts).
// Apart, `undici`: samples whose nearest bundle frame is undici's reader of answers (its socket reader, its
// WebAssembly llhttp and the functions that pass on what it read), not beneath the notifications' frames: the REST
// client's answers and, with the receivers' clients, the notifications' go through it before their handler is
// called, so only its difference from the operator without alerts in the same round is the notifications' (the
// bench adds it: its noise is a few samples a round). A notification's request is written within the transport's
// dispatch (in its frames), but for the first on a new connection (written when it connects: once a round here).
// What none of it can count: the garbage collector (a profile does not say whose allocations it collects; the
// bench prints an estimate in proportion to JavaScript time beside the figure, not in it), V8's and libuv's
// helper threads, and the kernel's work for the process after a syscall returns.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

type CallFrame = { functionName: string; url: string };
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] };
type CpuProfile = { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] };

export type Window = { readonly fromUs: number; readonly toUs: number };

/** A round's samples, by where they fell. */
export type RoundCounts = {
  /** The notifications' frames: their chunk's code and what it calls. */
  own: number;
  /** Node's HTTP client, not beneath any code of the bundle (its callbacks). */
  http: number;
  /** undici's reading of answers, not beneath the notifications' frames (for whoever's answer it is). */
  undici: number;
  gc: number;
  /** `(program)`: native code V8 does not attribute. */
  program: number;
  /** Every sample but `(idle)`. */
  busy: number;
};

/** `settled`: the samples taken while the thread ran (the figure); `all`: every sample (the upper reading). */
export type RoundSamples = { readonly settled: RoundCounts; readonly all: RoundCounts };

const HTTP_CLIENT = /^node:_http_(client|common|agent|outgoing)$/;
/** undici's socket reader and parser: what reads an answer before the handler it is for is called. */
const UNDICI_PARSER =
  /^(onHttpSocketData|readMore|execute|parseHeaders|wasm_on_\w+|on(HeadersComplete|MessageComplete|MessageBegin|Body|Status|HeaderField|HeaderValue|UpgradeOrMessage))$/;
/** The samples of each window in `file`, classified; `ownChunks` are the bundle's files that hold the notifications' code. */
export function notificationSamples(
  file: string,
  windows: readonly Window[],
  bundleDir: string,
  ownChunks: readonly string[],
  undiciChunks: readonly string[] = chunksDefining(bundleDir, 'function writeH1('),
): RoundSamples[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const isOwn = (node: ProfileNode): boolean => ownChunks.some((chunk) => node.callFrame.url.endsWith(`/${chunk}`));
  type Kind = 'own' | 'http' | 'undici' | 'gc' | 'program' | 'idle' | 'other';
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
      // undici reading an answer: the sample's nearest bundle frame is its reader's.
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
        if (parser === undefined && (inBundle || node.callFrame.url.startsWith('wasm://')))
          parser =
            node.callFrame.url.startsWith('wasm://') ||
            (UNDICI_PARSER.test(node.callFrame.functionName) && undiciChunks.some((chunk) => node.callFrame.url.endsWith(`/${chunk}`)));
        if (HTTP_CLIENT.test(node.callFrame.url)) http = true;
        // A bundle frame beneath Node's client is its callback (the transport's answer handler); one above it called it.
        else if (inBundle && http) calledByBundle = true;
      }
      if (found === 'other' && http && !calledByBundle) found = 'http';
      else if (found === 'other' && parser === true) found = 'undici';
    }
    classes.set(leaf, found);
    return found;
  };
  const interval = median(profile.timeDeltas.slice(1));
  const counts = (): RoundCounts => ({ own: 0, http: 0, undici: 0, gc: 0, program: 0, busy: 0 });
  const rounds = windows.map((): RoundSamples => ({ settled: counts(), all: counts() }));
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    const round = rounds[windows.findIndex((w) => at >= w.fromUs && at <= w.toUs)];
    if (round === undefined) continue;
    const kind = classify(profile.samples[i] ?? -1);
    if (kind === 'idle') continue;
    // Taken after a wait for a core, or not.
    const tallies = (profile.timeDeltas[i] ?? Infinity) > 1.5 * interval ? [round.all] : [round.all, round.settled];
    for (const tally of tallies) {
      tally.busy++;
      if (kind !== 'other') tally[kind]++;
    }
  }
  return rounds;
}

/** The bundle's files that hold the notifications' code (packages/notify: it defines startNotifications). */
export function notificationChunks(bundleDir: string): string[] {
  return chunksDefining(bundleDir, 'function startNotifications(');
}

function chunksDefining(bundleDir: string, text: string): string[] {
  return readdirSync(bundleDir).filter((f) => f.endsWith('.mjs') && readFileSync(join(bundleDir, f), 'utf8').includes(text));
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
