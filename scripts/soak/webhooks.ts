// The webhook side of the soak: deliveries of every kind a receiver meets in the wild, each with the answers
// it may get, sent to the live replicas' receivers on 127.0.0.1 with bounded concurrency.
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { providerHeaders, pushDelivery, type Provider } from '../../test/webhooks/deliveries.ts';

export const WebhookKind = {
  /** A signed push of a followed repository (what the Git host sends for every commit). */
  valid: 'valid',
  /** A signed push of a repository no sync follows. */
  unfollowed: 'unfollowed',
  badSignature: 'badSignature',
  unsigned: 'unsigned',
  /** Correctly signed, but not a push payload at all (random bytes, or JSON of the wrong shape). */
  garbageSigned: 'garbageSigned',
  garbageUnsigned: 'garbageUnsigned',
  wrongMethod: 'wrongMethod',
  unknownPath: 'unknownPath',
} as const;
export type WebhookKind = (typeof WebhookKind)[keyof typeof WebhookKind];

/** The answers each kind may get. 503: the receiver could not read its Secret (the API server was cut). */
const allowedStatuses: Record<WebhookKind, readonly number[]> = {
  valid: [202, 503],
  unfollowed: [202, 503],
  badSignature: [401, 503],
  unsigned: [401, 503],
  garbageSigned: [400, 503],
  garbageUnsigned: [401, 503],
  wrongMethod: [405],
  unknownPath: [404],
};

const floodMix: ReadonlyArray<readonly [WebhookKind, number]> = [
  ['valid', 35],
  ['unfollowed', 5],
  ['badSignature', 20],
  ['unsigned', 10],
  ['garbageSigned', 15],
  ['garbageUnsigned', 5],
  ['wrongMethod', 5],
  ['unknownPath', 5],
];

export type WebhookSecrets = Readonly<Record<Exclude<Provider, 'bitbucket'>, string>>;

export type WebhookTally = {
  sent: number;
  /** 2xx */
  accepted: number;
  /** 4xx */
  rejected: number;
  /** 503 */
  unavailable: number;
  /** no answer: the replica was killed or restarting */
  unreachable: number;
  /** an answer the kind does not allow (a 500, a forged delivery accepted, …) */
  wrong: number;
  readonly byKind: Record<WebhookKind, number>;
  readonly wrongExamples: string[];
};

export function newTally(): WebhookTally {
  return {
    sent: 0,
    accepted: 0,
    rejected: 0,
    unavailable: 0,
    unreachable: 0,
    wrong: 0,
    byKind: Object.fromEntries(Object.values(WebhookKind).map((kind) => [kind, 0])) as Record<WebhookKind, number>,
    wrongExamples: [],
  };
}

type Request = { path: string; method: string; headers: Record<string, string>; body: Buffer | undefined };

export class WebhookSender {
  readonly tally = newTally();
  readonly #secrets: WebhookSecrets;
  readonly #random: () => number;
  readonly #bodies = new Map<string, Buffer>();

  constructor(options: { secrets: WebhookSecrets; random: () => number }) {
    this.#secrets = options.secrets;
    this.#random = options.random;
  }

  /**
   * Sends `total` deliveries of the flood mix spread evenly over `durationMs`, at most `concurrency` at once,
   * each to one of `receivers()` (HOST:PORT), pushes naming one of `repoUrls`. Stops early when `signal` aborts.
   */
  async flood(options: {
    total: number;
    durationMs: number;
    concurrency: number;
    receivers: () => readonly string[];
    repoUrls: readonly string[];
    unfollowedUrl: string;
    signal: AbortSignal;
  }): Promise<void> {
    const started = Date.now();
    const inFlight = new Set<Promise<unknown>>();
    for (let i = 0; i < options.total && !options.signal.aborted; i++) {
      const due = started + (i * options.durationMs) / options.total;
      if (due > Date.now()) await sleep(due - Date.now());
      while (inFlight.size >= options.concurrency) await Promise.race(inFlight);
      const kind = this.#pick();
      const repoUrl = kind === 'unfollowed' ? options.unfollowedUrl : (options.repoUrls[Math.floor(this.#random() * options.repoUrls.length)] ?? '');
      const sending = this.#sendOnce(kind, this.#build(kind, repoUrl), options.receivers()).finally(() => inFlight.delete(sending));
      inFlight.add(sending);
    }
    await Promise.all(inFlight);
  }

  /** A GitHub push for a commit, as the Git host sends it; tried on up to three receivers until one answers. */
  async notifyPush(repoUrl: string, receivers: () => readonly string[]): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await this.#sendOnce('valid', this.#build('valid', repoUrl, 'github'), receivers())) return;
      await sleep(500);
    }
  }

  #pick(): WebhookKind {
    const total = floodMix.reduce((sum, [, weight]) => sum + weight, 0);
    let roll = this.#random() * total;
    for (const [kind, weight] of floodMix) {
      roll -= weight;
      if (roll < 0) return kind;
    }
    return 'valid';
  }

  #provider(): Exclude<Provider, 'bitbucket'> {
    const roll = this.#random();
    return roll < 0.5 ? 'github' : roll < 0.7 ? 'gitlab' : roll < 0.85 ? 'gitea' : 'generic';
  }

  #pushBody(provider: Exclude<Provider, 'bitbucket'>, repoUrl: string): Buffer {
    const key = `${provider} ${repoUrl}`;
    let body = this.#bodies.get(key);
    if (body === undefined) {
      body = pushDelivery(provider, repoUrl, this.#secrets[provider]).body;
      this.#bodies.set(key, body);
    }
    return body;
  }

  #build(kind: WebhookKind, repoUrl: string, fixedProvider?: Exclude<Provider, 'bitbucket'>): Request {
    const provider = fixedProvider ?? this.#provider();
    const push = (secret: string | undefined): Request => {
      const body = this.#pushBody(provider, repoUrl);
      return { path: `/hooks/${provider}`, method: 'POST', headers: providerHeaders(provider, body, secret, { id: randomUUID() }), body };
    };
    const garbage = (): Buffer =>
      this.#random() < 0.5
        ? randomBytes(1 + Math.floor(this.#random() * 2048))
        : Buffer.from(JSON.stringify({ ref: 42, repository: ['not', 'an', 'object'], commits: null }));
    switch (kind) {
      case 'valid':
      case 'unfollowed':
        return push(this.#secrets[provider]);
      case 'badSignature':
        return push(`not-the-${provider}-secret`);
      case 'unsigned':
        return push(undefined);
      case 'garbageSigned': {
        const body = garbage();
        return { path: `/hooks/${provider}`, method: 'POST', headers: providerHeaders(provider, body, this.#secrets[provider], { id: randomUUID() }), body };
      }
      case 'garbageUnsigned': {
        const body = garbage();
        return { path: `/hooks/${provider}`, method: 'POST', headers: providerHeaders(provider, body, undefined, { id: randomUUID() }), body };
      }
      case 'wrongMethod':
        return { path: `/hooks/${provider}`, method: 'GET', headers: {}, body: undefined };
      case 'unknownPath': {
        const body = this.#pushBody(provider, repoUrl);
        return { path: '/hooks/nonesuch', method: 'POST', headers: providerHeaders(provider, body, this.#secrets[provider]), body };
      }
    }
  }

  /** True when a receiver answered (whatever it answered). */
  async #sendOnce(kind: WebhookKind, request: Request, receivers: readonly string[]): Promise<boolean> {
    const tally = this.tally;
    tally.sent++;
    tally.byKind[kind]++;
    const receiver = receivers[Math.floor(this.#random() * receivers.length)];
    if (receiver === undefined) {
      tally.unreachable++;
      return false;
    }
    let status: number;
    let text: string;
    try {
      const response = await fetch(`http://${receiver}${request.path}`, {
        method: request.method,
        headers: request.headers,
        ...(request.body === undefined ? {} : { body: request.body }),
        signal: AbortSignal.timeout(15_000),
      });
      status = response.status;
      text = await response.text();
    } catch {
      tally.unreachable++;
      return false;
    }
    if (status === 503) tally.unavailable++;
    else if (status >= 200 && status < 300) tally.accepted++;
    else if (status >= 400 && status < 500) tally.rejected++;
    if (!allowedStatuses[kind].includes(status)) {
      tally.wrong++;
      if (tally.wrongExamples.length < 10) tally.wrongExamples.push(`${kind} ${request.method} ${request.path} → ${status} ${text.slice(0, 200)}`);
    }
    return true;
  }
}
