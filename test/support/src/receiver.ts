// A real HTTP receiver for notification tests: it records every request (method, path, headers, raw body) and
// answers as told. forgeStatusApi() answers like GitHub's and Gitea's documented commit status API (POST
// .../repos/{owner}/{repo}/statuses/{sha}, GET lists them), checking the token and the body's fields.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceivedRequest = {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly at: number;
};

export type Answer = { readonly status: number; readonly body?: unknown };
export type Responder = (request: ReceivedRequest) => Answer;

export type HttpReceiver = AsyncDisposable & {
  /** http://127.0.0.1:PORT (no trailing slash). */
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** Replaces how the receiver answers from now on. */
  respond(responder: Responder): void;
  /** The requests so far once `enough` says so; polls until the deadline. */
  waitFor(enough: (requests: readonly ReceivedRequest[]) => boolean, what: string, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
};

export async function startHttpReceiver(options: { respond?: Responder } = {}): Promise<HttpReceiver> {
  const requests: ReceivedRequest[] = [];
  let responder: Responder = options.respond ?? (() => ({ status: 200, body: 'ok' }));
  const server: Server = createServer((req, res) => {
    void readBody(req).then((body) => {
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(req.headers)) if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
      const request = { method: req.method ?? '', path: req.url ?? '', headers, body, at: Date.now() };
      requests.push(request);
      let answer: Answer;
      try {
        answer = responder(request);
      } catch (error) {
        answer = { status: 500, body: { message: error instanceof Error ? error.message : String(error) } };
      }
      const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
      res.writeHead(answer.status, { 'content-type': typeof answer.body === 'string' ? 'text/plain' : 'application/json' });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = (): Promise<void> =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    respond(next) {
      responder = next;
    },
    async waitFor(enough, what, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!enough(requests)) {
        if (Date.now() > deadline)
          throw new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}; received ${requests.length} request(s): ${requests
              .slice(-5)
              .map((r) => `${r.method} ${r.path} ${r.body.slice(0, 300)}`)
              .join(' | ')}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return [...requests];
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export type ForgeStatus = {
  readonly owner: string;
  readonly repo: string;
  readonly sha: string;
  readonly state: string;
  readonly context: string;
  readonly description: string;
  readonly flavor: 'github' | 'gitea';
};

/**
 * GitHub's (`/repos/...` under the API base) and Gitea's (`/api/v1/repos/...`) commit status API as documented:
 * POST with `{state, context, description?, target_url?}`, state one of error, failure, pending, success (Gitea
 * also warning); GitHub takes `Authorization: Bearer|token <t>`, Gitea `Authorization: token <t>`. 201 with the
 * status; 401 without the token; 422 for a bad body. GET on the same path lists the commit's statuses, newest first.
 */
export function forgeStatusApi(token: string): { responder: Responder; statuses: ForgeStatus[] } {
  const statuses: ForgeStatus[] = [];
  const responder: Responder = (request) => {
    const match = /^(\/api\/v1)?\/repos\/([^/]+)\/([^/]+)\/statuses\/([0-9a-f]{40})$/.exec(request.path);
    if (match === null) return { status: 404, body: { message: 'Not Found' } };
    const flavor = match[1] === undefined ? 'github' : 'gitea';
    const [owner = '', repo = '', sha = ''] = [match[2], match[3], match[4]];
    const accepted = flavor === 'gitea' ? [`token ${token}`] : [`token ${token}`, `Bearer ${token}`];
    if (!accepted.includes(request.headers['authorization'] ?? '')) return { status: 401, body: { message: 'Bad credentials' } };
    if (request.method === 'GET') return { status: 200, body: statuses.filter((s) => s.sha === sha && s.owner === owner && s.repo === repo).reverse() };
    if (request.method !== 'POST') return { status: 405, body: {} };
    if (!(request.headers['content-type'] ?? '').startsWith('application/json')) return { status: 415, body: {} };
    const body = JSON.parse(request.body) as Record<string, unknown>;
    const states = flavor === 'gitea' ? ['pending', 'success', 'error', 'failure', 'warning'] : ['error', 'failure', 'pending', 'success'];
    if (typeof body['state'] !== 'string' || !states.includes(body['state'])) return { status: 422, body: { message: 'Validation Failed: state' } };
    if (body['context'] !== undefined && typeof body['context'] !== 'string') return { status: 422, body: { message: 'Validation Failed: context' } };
    const known = new Set(['state', 'context', 'description', 'target_url']);
    const unknown = Object.keys(body).filter((k) => !known.has(k));
    if (unknown.length > 0) return { status: 422, body: { message: `unknown fields ${unknown.join(', ')}` } };
    const status: ForgeStatus = {
      owner,
      repo,
      sha,
      state: body['state'],
      context: typeof body['context'] === 'string' ? body['context'] : 'default',
      description: typeof body['description'] === 'string' ? body['description'] : '',
      flavor,
    };
    statuses.push(status);
    return { status: 201, body: { id: statuses.length, ...status } };
  };
  return { responder, statuses };
}
