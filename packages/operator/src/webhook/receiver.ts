// The webhook receiver: POST /hooks/{github,gitlab,gitea,bitbucket,generic} on its own port. Order of
// work per delivery, cheapest and safest first: route → body under a size limit and a deadline →
// signature (constant time) → replay check → payload parse → wake the ConfigSyncs that follow the
// pushed repository and ref. Nothing about the payload or the secrets reaches a log line.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { ConfigSync } from '@syncline/api';
import { trace } from '@syncline/runtime';
import type { Metrics } from '../metrics.ts';
import { listen } from '../server.ts';
import { BodyError, readBody } from './body.ts';
import { followersOf } from './match.ts';
import { PayloadError, providerSpecs, providers, type Delivery, type Provider } from './providers.ts';
import { DeliveryLog } from './replay.ts';
import type { WebhookSecrets } from './secrets.ts';
import { createCoalescer, type CoalescedWake } from './wake.ts';

export const WebhookResult = {
  /** A push that woke at least one ConfigSync. */
  accepted: 'accepted',
  /** A valid push for a repository and ref nobody follows. */
  unfollowed: 'unfollowed',
  ping: 'ping',
  /** A verified event other than a push. */
  ignored: 'ignored',
  duplicate: 'duplicate',
  unauthorized: 'unauthorized',
  /** No secret is configured for the provider: every delivery is refused. */
  unconfigured: 'unconfigured',
  invalid: 'invalid',
  tooLarge: 'too_large',
  timeout: 'timeout',
  notFound: 'not_found',
  methodNotAllowed: 'method_not_allowed',
  /** The secrets could not be read. */
  unavailable: 'unavailable',
} as const;
export type WebhookResult = (typeof WebhookResult)[keyof typeof WebhookResult];

export type WebhookServerOptions = {
  /** HOST:PORT; port 0 picks a free port. */
  readonly address: string;
  readonly secrets: WebhookSecrets;
  readonly configSyncs: () => readonly ConfigSync[];
  /** Wakes one ConfigSync (`namespace/name`) now. */
  readonly wake: (key: string) => void;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /** Headers and body must arrive within this (default 10 s). */
  readonly readTimeoutMs?: number;
  /** A push to a repository quiet this long (default 150 ms) wakes at once; closer ones are held into one wake; see createCoalescer. */
  readonly coalesceMs?: number;
};

export type WebhookServer = { readonly address: string; close(): Promise<void> };

const routes = new Map<string, Provider>(providers.map((p) => [`/hooks/${p}`, p]));
routes.set('/hooks/forgejo', 'gitea');

/**
 * After an early answer to a sender that is still sending, keep reading (and discarding) for a moment
 * before closing: closing at once makes the kernel reset the connection, and the sender may lose the
 * answer it has not read yet (the "lingering close" of RFC 9112 section 9.6). Bounded in time, and the
 * bytes are dropped, never buffered.
 */
function lingerThenClose(req: IncomingMessage): void {
  req.resume();
  const timer = setTimeout(() => req.socket.destroy(), 1000);
  timer.unref();
  req.socket.once('close', () => clearTimeout(timer));
}

/** Reports a wake: the log line, and the opt-in reconcile trace's mark. */
function wakeReporter(log: Logger): (wake: CoalescedWake) => void {
  return (wake) => {
    trace(wake.repo, 'webhook-wake');
    log.info(wake, 'webhook wake');
  };
}

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const readTimeoutMs = options.readTimeoutMs ?? 10_000;
  const deliveries = new DeliveryLog();
  const log = options.logger.child({ component: 'webhooks' });
  const warnedUnconfigured = new Map<Provider, number>();
  const coalescer = createCoalescer({
    wake: options.wake,
    // One line per wake (not per push): what a burst cost, and the receiver-side timing tests measure.
    onWake: wakeReporter(log),
    ...(options.coalesceMs === undefined ? {} : { quietMs: options.coalesceMs }),
  });

  const answer = (res: ServerResponse, provider: string, result: WebhookResult, status: number, body: Record<string, unknown>, close = false): void => {
    options.metrics.webhookDeliveries.inc({ provider, result });
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, { 'Content-Type': 'application/json', ...(close ? { Connection: 'close' } : {}) }).end(JSON.stringify(body));
  };

  async function receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]?.replace(/\/+$/, '') ?? '';
    const provider = routes.get(path);
    if (provider === undefined) {
      req.resume();
      answer(res, 'unknown', WebhookResult.notFound, 404, { error: 'not found' });
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      res.setHeader('Allow', 'POST');
      answer(res, provider, WebhookResult.methodNotAllowed, 405, { error: 'POST only' });
      return;
    }
    const spec = providerSpecs[provider];

    let body: Buffer;
    try {
      body = await readBody(req, { maxBytes: maxBodyBytes, timeoutMs: readTimeoutMs });
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      switch (error.code) {
        case 'too_large':
          // No `Connection: close` here: Node would destroy the socket as soon as the answer is written.
          answer(res, provider, WebhookResult.tooLarge, 413, { error: `the body is over the ${maxBodyBytes}-byte limit` });
          lingerThenClose(req);
          return;
        case 'timeout':
          answer(res, provider, WebhookResult.timeout, 408, { error: 'the body took too long' }, true);
          return;
        case 'aborted':
          options.metrics.webhookDeliveries.inc({ provider, result: WebhookResult.timeout });
          return;
      }
    }

    let secrets: readonly string[];
    try {
      secrets = await options.secrets.get(provider);
      if (secrets.length === 0) secrets = await options.secrets.get(provider, { fresh: true });
    } catch (error) {
      log.warn({ provider, err: error instanceof Error ? error.message : String(error) }, 'webhook secrets unavailable');
      answer(res, provider, WebhookResult.unavailable, 503, { error: 'unavailable' });
      return;
    }
    if (secrets.length === 0) {
      const last = warnedUnconfigured.get(provider) ?? 0;
      if (Date.now() - last > 60_000) {
        warnedUnconfigured.set(provider, Date.now());
        log.warn({ provider }, `a ${provider} webhook arrived but the webhook Secret has no "${provider}" key; refusing it`);
      }
      answer(res, provider, WebhookResult.unconfigured, 401, { error: 'unauthorized' });
      return;
    }
    let verified = spec.verify(req.headers, body, secrets);
    if (!verified) {
      // The secret may just have been rotated: look again (rate-limited inside) before refusing.
      const fresh = await options.secrets.get(provider, { fresh: true }).catch(() => secrets);
      if (fresh !== secrets) verified = spec.verify(req.headers, body, fresh);
    }
    if (!verified) {
      answer(res, provider, WebhookResult.unauthorized, 401, { error: 'unauthorized' });
      return;
    }

    const deliveryId = spec.deliveryId(req.headers);
    let delivery: Delivery;
    try {
      delivery = spec.parse(req.headers, body);
    } catch (error) {
      if (!(error instanceof PayloadError)) throw error;
      log.info({ provider, delivery: deliveryId, reason: error.message }, 'webhook delivery refused: bad payload');
      answer(res, provider, WebhookResult.invalid, 400, { error: error.message });
      return;
    }
    const sighting = deliveryId === undefined ? undefined : deliveries.sight(provider, deliveryId);
    if (sighting?.kind === 'duplicate') {
      log.info({ provider, delivery: deliveryId, agoMs: sighting.agoMs }, 'webhook delivery arrived twice within seconds; the first one wakes the syncs');
      answer(res, provider, WebhookResult.duplicate, 200, { result: 'duplicate' });
      return;
    }
    if (sighting?.kind === 'redelivery')
      log.info({ provider, delivery: deliveryId, agoS: Math.round(sighting.agoMs / 1000) }, 'webhook redelivery; processed like a new delivery');
    switch (delivery.kind) {
      case 'ping':
        log.info({ provider, delivery: deliveryId }, 'webhook ping');
        answer(res, provider, WebhookResult.ping, 200, { result: 'pong' });
        return;
      case 'ignored':
        log.debug({ provider, delivery: deliveryId, event: delivery.event.slice(0, 64) }, 'webhook event ignored');
        answer(res, provider, WebhookResult.ignored, 200, { result: 'ignored' });
        return;
      case 'push': {
        trace(delivery.repos[0] ?? delivery.repoSuffixes[0] ?? '', 'webhook-push');
        const keys = followersOf(delivery, options.configSyncs());
        coalescer.add(delivery.repos[0] ?? delivery.repoSuffixes[0] ?? '', keys);
        log.info(
          { provider, delivery: deliveryId, repo: delivery.repos[0] ?? delivery.repoSuffixes[0], refs: delivery.refs.slice(0, 10), woken: keys.length },
          'webhook push',
        );
        answer(res, provider, keys.length > 0 ? WebhookResult.accepted : WebhookResult.unfollowed, 202, {
          result: keys.length > 0 ? 'accepted' : 'unfollowed',
          woken: keys.length,
        });
        return;
      }
    }
  }

  // Headers and request deadlines are checked every second, not every 30 s (Node's default).
  const server = createServer({ connectionsCheckingInterval: 1_000 }, (req, res) => {
    receive(req, res).catch((error: unknown) => {
      log.error({ err: error instanceof Error ? error.message : String(error) }, 'webhook receiver failed');
      if (!res.headersSent) res.writeHead(500, { Connection: 'close' }).end();
    });
  });
  // Slow senders: headers and body each get the read timeout; Node's request timeout is the backstop.
  server.headersTimeout = readTimeoutMs;
  server.requestTimeout = readTimeoutMs + 1_000;
  server.maxConnections = 1024;
  const address = await listen(server, options.address);
  return {
    address,
    close: () =>
      new Promise((resolve) => {
        coalescer.flush();
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
