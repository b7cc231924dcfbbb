// `pnpm bench delivery [--messages 2000] [--runs 5]`: the CPU one notification costs the operator's process on its way
// out: the dispatcher (dedup, queue, rate limit, timeout, retry policy) and the webhook payload, sent with the
// transport the operator uses to a real HTTP receiver in another process (whose CPU is not counted). Beside it, the
// floor: the same requests sent one after another with Node's http module alone on a kept-alive connection, which
// no dispatcher built on it can go under. Prints CPU µs per message (user + system, median of the runs).
import { spawn } from 'node:child_process';
import { request, Agent } from 'node:http';
import { parseArgs } from 'node:util';
import { nodeHttpTransport } from '@syncline/source-git';
import { createDispatcher } from '../src/delivery.ts';
import { chatRequest, type Message } from '../src/payloads.ts';

const { values } = parseArgs({ options: { messages: { type: 'string', default: '2000' }, runs: { type: 'string', default: '5' } } });
const MESSAGES = Number(values.messages);
const RUNS = Number(values.runs);

// The receiver: a child process answering 200 to every POST, as a chat webhook does.
const receiver = spawn(process.execPath, ['-e', "require('node:http').createServer((q,s)=>{q.resume();q.on('end',()=>{s.writeHead(200,{'content-type':'text/plain'});s.end('ok')})}).listen(0,'127.0.0.1',function(){process.send(this.address().port)})"], {
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const port = await new Promise<number>((resolve) => receiver.once('message', (m) => resolve(Number(m))));
const url = `http://127.0.0.1:${port}/hook`;

const message = (i: number): Message => ({
  alert: 'bench/s1',
  event: { kind: 'ConfigSync', namespace: 'bench', name: `s${i}`, labels: {}, severity: 'info', reason: 'Synced', category: 'Applied', message: `revision 0123456789ab: applied 5 objects to target s${i}`, recovered: false, revision: '0123456789ab', timestamp: new Date().toISOString() },
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
  }
});

const dispatched = await measure(async (round) => {
  const dispatcher = createDispatcher({ transport: nodeHttpTransport, count: () => undefined, queueSize: MESSAGES });
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
  }
  await all.promise;
  dispatcher.stop();
});

receiver.kill();
floorAgent.destroy();
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const show = (xs: readonly number[]): string => xs.map((x) => x.toFixed(0)).join(', ');
console.log(`delivery bench: ${MESSAGES} webhook messages per run, ${RUNS} runs (after one warm-up), receiver in another process, Node ${process.versions.node}`);
console.log(`Node's http alone, one at a time, kept alive (the floor): ${median(floor).toFixed(0)} µs CPU per message  (runs: ${show(floor)})`);
console.log(`the dispatcher and the operator's transport:             ${median(dispatched).toFixed(0)} µs CPU per message  (runs: ${show(dispatched)}; ${(median(dispatched) / median(floor)).toFixed(2)}× the floor)`);
