// `pnpm bench transport [--requests 400] [--rounds 5] [--concurrency 8]`: the CPU one API request costs the
// client's process, against a real control plane of its own (whose CPU is not counted): a GET of a ConfigMap
// and a server-side apply PATCH that changes one. Two clients, each with the REST wrapper's logic (deadline
// signal, credential headers, body collected and parsed): Node's https client on a keep-alive agent (the
// transport before undici) and createKubeRest over undici's dispatch (HTTP/1.1). HTTP/2 (undici's allowH2) was
// measured too, and cost more than either (see transport.ts). Rounds alternate the clients; prints CPU µs per request (user + system, median of the
// rounds) and the target: undici's under Node's for both operations.
import { KubeConfig } from '@kubernetes/client-node';
import { startControlPlane } from '@syncline/test-support';
import { Agent, request as httpsRequest } from 'node:https';
import { createSecureContext } from 'node:tls';
import { parseArgs } from 'node:util';
import { connectionFromKubeConfig, createKubeRest, requestSignal, type KubeConnection, type KubeRequest } from '../src/index.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '400' },
    rounds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '8' },
  },
});
const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);
const CONCURRENCY = Number(values.concurrency);
const NAMESPACE = 'transport-bench';

type Send = <T>(req: KubeRequest) => Promise<T>;

/** The request path of the REST client before undici: node:https on a keep-alive agent, one secure context. */
function nodeHttps(connection: KubeConnection): Send {
  const { tls } = connection;
  const agent = new Agent({
    keepAlive: true,
    maxSockets: 16,
    secureContext: createSecureContext({ ca: tls.ca, cert: tls.cert, key: tls.key }),
    rejectUnauthorized: tls.rejectUnauthorized,
    servername: tls.servername,
  });
  return <T>(req: KubeRequest): Promise<T> => {
    const abort = requestSignal({ timeoutMs: 60_000 });
    return new Promise<T>((resolve, reject) => {
      const target = new URL(req.path, connection.server);
      for (const [key, value] of Object.entries(req.query ?? {})) if (value !== undefined) target.searchParams.set(key, String(value));
      const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
      connection.authHeaders().then((auth) => {
        const r = httpsRequest(
          target,
          {
            method: req.method,
            agent,
            signal: abort.signal,
            headers: {
              ...auth,
              'User-Agent': 'bench',
              Accept: 'application/json',
              ...(payload !== undefined ? { 'Content-Type': req.contentType ?? 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {}),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('error', reject);
            res.on('end', () => {
              abort.done();
              const text = Buffer.concat(chunks).toString('utf8');
              const status = res.statusCode ?? 0;
              if (status >= 200 && status < 300) resolve((text === '' ? undefined : JSON.parse(text)) as T);
              else reject(new Error(`${req.method} ${req.path}: ${status} ${text.slice(0, 200)}`));
            });
          },
        );
        r.on('error', reject);
        r.end(payload);
      }, reject);
    });
  };
}

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

/** CPU µs per request of `count` requests made `CONCURRENCY` at a time. */
async function measure(count: number, one: (i: number) => Promise<unknown>): Promise<number> {
  gc();
  const before = process.cpuUsage();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) await one(next++);
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

await using controlPlane = await startControlPlane({ onProgress: (line) => console.error(`[control-plane] ${line}`) });
const kc = new KubeConfig();
kc.loadFromFile(controlPlane.kubeconfigPath);
const connection = await connectionFromKubeConfig(kc);
const undici = await createKubeRest(connection);
const clients: Record<string, Send> = {
  'node:https': nodeHttps(connection),
  undici: (req) => undici.request(req),
};
await undici.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: NAMESPACE } } });
const configMaps = `/api/v1/namespaces/${NAMESPACE}/configmaps`;
const OBJECTS = 50;
const apply = (send: Send, i: number, round: string): Promise<unknown> =>
  send({
    method: 'PATCH',
    path: `${configMaps}/bench-${i % OBJECTS}`,
    query: { fieldManager: 'bench', force: true },
    contentType: 'application/apply-patch+yaml',
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `bench-${i % OBJECTS}` }, data: { round, value: 'x'.repeat(400) } },
  });
for (let i = 0; i < OBJECTS; i++) await apply(clients['undici'] as Send, i, 'warm');
// warm every client's connections and the JIT
for (const send of Object.values(clients)) {
  await measure(200, (i) => send({ method: 'GET', path: `${configMaps}/bench-${i % OBJECTS}` }));
  await measure(100, (i) => apply(send, i, 'warm'));
}

const figures: Record<string, { get: number[]; apply: number[] }> = {};
const names = Object.keys(clients);
for (let round = 0; round < ROUNDS; round++) {
  // each round in another order: none always runs first (a warmer or a busier machine)
  const order = names.map((_, k) => names[(k + round) % names.length] as string);
  for (const name of order) {
    const send = clients[name] as Send;
    const entry = (figures[name] ??= { get: [], apply: [] });
    entry.get.push(await measure(REQUESTS, (i) => send({ method: 'GET', path: `${configMaps}/bench-${i % OBJECTS}` })));
    entry.apply.push(await measure(REQUESTS, (i) => apply(send, i, `r${round}-${name}`)));
  }
}

const line = (name: string): string => {
  const f = figures[name] as { get: number[]; apply: number[] };
  return `${name.padEnd(10)}  GET ${median(f.get).toFixed(0).padStart(4)} µs  apply ${median(f.apply).toFixed(0).padStart(4)} µs   (rounds: GET ${f.get.map((x) => x.toFixed(0)).join(' ')}; apply ${f.apply.map((x) => x.toFixed(0)).join(' ')})`;
};
console.log(`\nclient CPU per request, ${REQUESTS} requests x ${ROUNDS} rounds, ${CONCURRENCY} at a time (median of rounds):`);
for (const name of names) console.log(line(name));
const node = figures['node:https'] as { get: number[]; apply: number[] };
const h1 = figures['undici'] as { get: number[]; apply: number[] };
const ratio = (a: number[], b: number[]): string => `${((median(a) / median(b)) * 100).toFixed(0)} %`;
console.log(`undici / node:https: GET ${ratio(h1.get, node.get)}, apply ${ratio(h1.apply, node.apply)} (target: under 100 % for both)`);
