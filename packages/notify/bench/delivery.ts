// `pnpm bench delivery [--messages 2000] [--runs 5] [--gap MS]`: the CPU one notification costs the operator's process on its way
// out: the dispatcher (dedup, queue, rate limit, timeout, retry policy) and the webhook payload, sent to a real HTTP
// receiver in another process (whose CPU is not counted) by the transport the operator uses (the receivers' undici
// clients, transport.ts) and by the Git source's (Node's http client), which notifications used before. Beside them,
// Node's http module alone, one request after another on a kept-alive connection: the floor of any dispatcher built
// on that client. Prints CPU µs per message (user + system, median of the runs).
import { spawn } from 'node:child_process';
import { request, Agent } from 'node:http';
import { parseArgs } from 'node:util';
import { nodeHttpTransport, type HttpTransport } from '@syncline/source-git';
import { createReceiverTransport } from '../src/transport.ts';
import { createDispatcher } from '../src/delivery.ts';
import { chatRequest, type Message } from '../src/payloads.ts';

const { values } = parseArgs({
  options: { messages: { type: 'string', default: '2000' }, runs: { type: 'string', default: '5' }, gap: { type: 'string', default: '0' } },
});
const MESSAGES = Number(values.messages);
/** Milliseconds between two messages handed to the dispatcher (0: all at once); the floor waits as long between its requests. */
const GAP_MS = Number(values.gap);
const pause = (): Promise<void> => (GAP_MS === 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, GAP_MS)));
const RUNS = Number(values.runs);

// The receiver: a child process answering 200 to every POST, as a chat webhook does.
// It counts the connections it was opened (kept alive, a run needs one) and tells when asked.
const receiver = spawn(
  process.execPath,
  [
    '-e',
    "let n=0;const v=require('node:http').createServer((q,s)=>{q.resume();q.on('end',()=>{s.writeHead(200,{'content-type':'text/plain'});s.end('ok')})});v.on('connection',()=>n++);process.on('message',()=>process.send({connections:n}));v.listen(0,'127.0.0.1',function(){process.send(this.address().port)})",
  ],
  {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  },
);
const port = await new Promise<number>((resolve) => receiver.once('message', (m) => resolve(Number(m))));
const url = `http://127.0.0.1:${port}/hook`;

const message = (i: number): Message => ({
  alert: 'bench/s1',
  event: {
    kind: 'ConfigSync',
    namespace: 'bench',
    name: `s${i}`,
    labels: {},
    severity: 'info',
    reason: 'Synced',
    category: 'Applied',
    message: `revision 0123456789ab: applied 5 objects to target s${i}`,
    recovered: false,
    revision: '0123456789ab',
    timestamp: new Date().toISOString(),
  },
});

/** CPU µs of this process per message for `send` (which resolves when all `MESSAGES` are answered). */
async function measure(send: (round: number) => Promise<void>): Promise<number[]> {
  const perMessage: number[] = [];
  for (let round = 0; round <= RUNS; round++) {
    const before = process.cpuUsage();
    await send(round);
    const used = process.cpuUsage(before);
    if (round > 0) perMessage.push((used.user + used.system) / MESSAGES); // the first round warms up (JIT, connection)
  }
  return perMessage;
}

// With a gap, the waits cost CPU of their own (a timer, a wake-up): measured alone, and taken off both figures below.
const idle = await measure(async () => {
  for (let i = 0; i < MESSAGES; i++) await pause();
});

const floorAgent = new Agent({ keepAlive: true, maxSockets: 1 });
const floor = await measure(async () => {
  for (let i = 0; i < MESSAGES; i++) {
    const { body } = chatRequest({ type: 'webhook' }, { address: url }, message(i));
    await new Promise<void>((resolve, reject) => {
      const req = request(url, { method: 'POST', agent: floorAgent, headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end(body);
    });
    await pause();
  }
});

const dispatchedBy =
  (transport: HttpTransport) =>
  async (round: number): Promise<void> => {
    const dispatcher = createDispatcher({ transport, count: () => undefined, queueSize: MESSAGES });
    let answered = 0;
    const all = Promise.withResolvers<void>();
    for (let i = 0; i < MESSAGES; i++) {
      dispatcher.deliver({
        provider: 'bench/hook',
        providerType: 'webhook',
        dedupKey: `${round}/${i}`,
        settings: { messages: 1_000_000, intervalMs: 60_000, timeoutMs: 15_000 },
        prepare: () => Promise.resolve(chatRequest({ type: 'webhook' }, { address: url }, message(i))),
        done: (result) => {
          if (result !== 'sent') all.reject(new Error(`a delivery was ${result}`));
          if (++answered === MESSAGES) all.resolve();
        },
      });
      await pause();
    }
    await all.promise;
    dispatcher.stop();
  };
const dispatched = await measure(dispatchedBy(nodeHttpTransport));
const clients = createReceiverTransport();
const pooled = await measure(dispatchedBy(clients));
await clients.close();

receiver.send('count');
const { connections } = await new Promise<{ connections: number }>((resolve) => receiver.once('message', (m) => resolve(m as { connections: number })));
receiver.kill();
floorAgent.destroy();
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const waits = median(idle);
const show = (xs: readonly number[]): string => xs.map((x) => (x - waits).toFixed(0)).join(', ');
console.log(
  `delivery bench: ${MESSAGES} webhook messages per run${GAP_MS === 0 ? '' : `, ${GAP_MS} ms apart`}, ${RUNS} runs (after one warm-up), receiver in another process, Node ${process.versions.node}`,
);
if (GAP_MS > 0) console.log(`the waits between messages alone: ${waits.toFixed(0)} µs CPU each (taken off the figures below)`);
console.log(`Node's http alone, one at a time, kept alive (the floor): ${(median(floor) - waits).toFixed(0)} µs CPU per message  (runs: ${show(floor)})`);
console.log(
  `the dispatcher and Node's http client (the Git transport): ${(median(dispatched) - waits).toFixed(0)} µs CPU per message  (runs: ${show(dispatched)}; ${((median(dispatched) - waits) / (median(floor) - waits)).toFixed(2)}× the floor)`,
);
console.log(
  `the dispatcher and the receivers' clients (the operator's):${(median(pooled) - waits).toFixed(0)} µs CPU per message  (runs: ${show(pooled)}; ${((median(pooled) - waits) / (median(floor) - waits)).toFixed(2)}× the floor)`,
);
console.log(`connections the receiver was opened: ${connections} for ${MESSAGES * (RUNS + 1) * 3} messages`);
