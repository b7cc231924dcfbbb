// Webhook deliveries signed the way each provider documents, built from the realistic payload fixtures
// next to the receiver (packages/operator/src/webhook/testdata), pointed at a repository of the test Git server.
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const testdata = join(import.meta.dirname, '..', '..', 'packages', 'operator', 'src', 'webhook', 'testdata');

export type Provider = 'github' | 'gitlab' | 'gitea' | 'bitbucket' | 'generic';
export type Delivery = { provider: Provider; path: string; body: Buffer; headers: Record<string, string>; id: string };

export const hmac = (secret: string, body: Buffer | string): string => createHmac('sha256', secret).update(body).digest('hex');

/** A fixture with every address of the fixture's repository (acme/configs on any host) replaced by `repoUrl`. */
export function fixtureFor(name: string, repoUrl: string): string {
  const base = repoUrl.replace(/\.git$/, '');
  return readFileSync(join(testdata, name), 'utf8').replace(/(?:https?|git|ssh):\/\/[^/"]+\/(?:scm\/)?(?:acme|ops)\/configs/g, base);
}

const fixtures: Record<Exclude<Provider, 'generic'>, string> = {
  github: 'github-push.json',
  gitlab: 'gitlab-push.json',
  gitea: 'gitea-push.json',
  bitbucket: 'bitbucket-cloud-push.json',
};

/** Headers a provider sends with `body`, signed with `secret` (undefined: unsigned). */
export function providerHeaders(
  provider: Provider,
  body: Buffer,
  secret: string | undefined,
  options: { id?: string; event?: string; dataCenter?: boolean } = {},
): Record<string, string> {
  const id = options.id ?? randomUUID();
  const sig = secret === undefined ? undefined : hmac(secret, body);
  const signed = (name: string, value: string | undefined): Record<string, string> => (value === undefined ? {} : { [name]: value });
  switch (provider) {
    case 'github':
      return {
        'Content-Type': 'application/json',
        'User-Agent': 'GitHub-Hookshot/7a1a3b2',
        'X-GitHub-Event': options.event ?? 'push',
        'X-GitHub-Delivery': id,
        'X-GitHub-Hook-ID': '109948940',
        ...signed('X-Hub-Signature-256', sig === undefined ? undefined : `sha256=${sig}`),
      };
    case 'gitlab':
      return {
        'Content-Type': 'application/json',
        'User-Agent': 'GitLab/17.5.0',
        'X-Gitlab-Event': options.event ?? 'Push Hook',
        'Idempotency-Key': id,
        // Shared by a chain of recursive hooks: not a delivery id.
        'X-Gitlab-Event-UUID': 'a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d',
        'X-Gitlab-Webhook-UUID': '2dc1a8b5-7b1e-4c4e-9f0a-8b1a2c3d4e5f',
        'X-Gitlab-Instance': 'https://gitlab.example.com',
        ...signed('X-Gitlab-Token', secret),
      };
    case 'gitea':
      return {
        'Content-Type': 'application/json',
        'X-Gitea-Event': options.event ?? 'push',
        'X-Gitea-Event-Type': options.event ?? 'push',
        'X-Gitea-Delivery': id,
        'X-GitHub-Event': options.event ?? 'push',
        ...signed('X-Gitea-Signature', sig),
      };
    case 'bitbucket':
      return {
        'Content-Type': 'application/json',
        'User-Agent': options.dataCenter === true ? 'Atlassian HttpClient 4.0.1 / Bitbucket-8.19.0' : 'Bitbucket-Webhooks/2.0',
        'X-Event-Key': options.event ?? (options.dataCenter === true ? 'repo:refs_changed' : 'repo:push'),
        ...(options.dataCenter === true ? { 'X-Request-Id': id } : { 'X-Request-UUID': id, 'X-Hook-UUID': '{8f2b5c1e-4a3d-4b6c-9e7f-1a2b3c4d5e6f}' }),
        ...signed('X-Hub-Signature', sig === undefined ? undefined : `sha256=${sig}`),
      };
    case 'generic':
      return {
        'Content-Type': 'application/json',
        'X-Syncline-Event': options.event ?? 'push',
        'X-Syncline-Delivery': id,
        ...signed('X-Syncline-Signature', sig === undefined ? undefined : `sha256=${sig}`),
      };
  }
}

/** A push of `ref` (default refs/heads/main) to `repoUrl`, as `provider` sends it. */
export function pushDelivery(provider: Provider, repoUrl: string, secret: string, options: { id?: string; ref?: string; dataCenter?: boolean } = {}): Delivery {
  const id = options.id ?? randomUUID();
  let text: string;
  if (provider === 'generic') text = JSON.stringify({ repo: repoUrl, ref: options.ref ?? 'refs/heads/main' });
  else if (provider === 'bitbucket' && options.dataCenter === true) text = fixtureFor('bitbucket-server-push.json', repoUrl);
  else text = fixtureFor(fixtures[provider], repoUrl);
  if (options.ref !== undefined && provider !== 'generic') {
    if (provider === 'bitbucket') throw new Error('set refs of Bitbucket fixtures by hand');
    const payload = JSON.parse(text) as Record<string, unknown>;
    payload['ref'] = options.ref;
    if (provider === 'gitlab' && options.ref.startsWith('refs/tags/')) payload['object_kind'] = 'tag_push';
    text = JSON.stringify(payload);
  }
  const body = Buffer.from(text);
  const headers = providerHeaders(provider, body, secret, {
    id,
    ...(options.dataCenter === undefined ? {} : { dataCenter: options.dataCenter }),
    ...(provider === 'gitlab' && options.ref?.startsWith('refs/tags/') === true ? { event: 'Tag Push Hook' } : {}),
  });
  return { provider, path: `/hooks/${provider}`, body, headers, id };
}

export type Answer = { status: number; body: Record<string, unknown> };

/** POSTs a delivery to the receiver at HOST:PORT. */
export async function send(
  address: string,
  delivery: { path: string; body: Buffer | string; headers: Record<string, string> },
  method = 'POST',
): Promise<Answer> {
  const response = await fetch(`http://${address}${delivery.path}`, {
    method,
    headers: delivery.headers,
    ...(method === 'GET' ? {} : { body: delivery.body }),
  });
  const text = await response.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: response.status, body };
}
