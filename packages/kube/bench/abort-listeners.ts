// `pnpm bench abort-listeners [--rounds 3]`: what a request's abort wiring costs (requestSignal, its exchange's
// listener, done) with 1, 100 and 1,000 requests in flight on one write fence, as the operator's client has them
// in a burst of applies. No server: only the wiring. Target: the cost per request does not grow with the
// requests in flight (each signal has one listener, see request-signal.ts); with a listener per request on the
// fence, Node's EventTarget walked the whole list on each add and remove (~1.1 µs at 1, ~3.5 µs at 1,000 in
// flight on Node 24).
import { parseArgs } from 'node:util';
import { requestSignal, type RequestSignal } from '../src/request-signal.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } });
const ROUNDS = Number(values.rounds);
const TOTAL = 300_000;

/** Nanoseconds per request: `inFlight` requests made on one fence, each with one listener, then all settled. */
function perRequest(inFlight: number): number {
  const fence = new AbortController();
  const onAbort = (): void => undefined;
  const live: { request: RequestSignal; leave: () => void }[] = [];
  const started = process.hrtime.bigint();
  for (let batch = 0; batch < TOTAL / inFlight; batch++) {
    for (let i = 0; i < inFlight; i++) {
      const request = requestSignal({ timeoutMs: 60_000, fence: fence.signal });
      live.push({ request, leave: request.listen(onAbort) });
    }
    for (const { request, leave } of live) {
      leave();
      request.done();
    }
    live.length = 0;
  }
  return Number(process.hrtime.bigint() - started) / TOTAL;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const figures = new Map<number, number>();
for (const inFlight of [1, 100, 1000]) {
  perRequest(inFlight); // warm-up
  figures.set(inFlight, median(Array.from({ length: ROUNDS }, () => perRequest(inFlight))));
}
for (const [inFlight, ns] of figures) console.log(`${String(inFlight).padStart(5)} in flight: ${(ns / 1000).toFixed(2)} µs per request (median of ${ROUNDS})`);
const growth = (figures.get(1000) ?? 0) / (figures.get(1) ?? 1);
console.log(`1,000 in flight / 1 in flight: ${growth.toFixed(2)}× (target ≤ 2×: ${growth <= 2 ? 'met' : 'NOT met'})`);
