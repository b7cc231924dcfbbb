// Delivery: one channel per NotificationProvider, off the reconcile path. Identical messages within a window are sent once;
// a bounded queue (one request at a time, so a commit's pending precedes its success) drops what does not fit; a
// token bucket holds the NotificationProvider to its rate; each attempt has a timeout and a failed one (network, 429,
// 5xx) is retried with exponential backoff (cockatiel's, decorrelated jitter). Every outcome is counted.
// A message costs what its one HTTP request costs and little more: the channel is a plain queue, an attempt one
// AbortController (one timer watches every attempt's deadline), nothing is aborted after an answer (an abort builds
// an error and wakes listeners), and a token at hand is taken without waiting.
// A NotificationProvider with spec.batch gathers its deliveries, Alertmanager-style: the first opens a window, and
// the batch joins the queue when the window ends or it holds maxEvents. A batch is one unit of the queue: its
// requests (one, or several where the receiver's limit splits it) take a token each, are retried each as a whole,
// and report to every delivery they carry. The queue's bound counts deliveries, batched or not.
// Nothing here logs or returns a URL, a header or a response body: they may hold credentials.
import { Readable } from 'node:stream';
import { ExponentialBackoff, type IBackoff } from 'cockatiel';
import type { HttpProxy, HttpTransport } from '@syncline/source-git';
import type { Message, OutgoingRequest } from './payloads.ts';

export const DeliveryResult = { Sent: 'sent', Failed: 'failed', Dropped: 'dropped', Deduplicated: 'deduplicated' } as const;
export type DeliveryResult = (typeof DeliveryResult)[keyof typeof DeliveryResult];

/** A request as the channel sends it: the receiver's own CA and proxy, and how to read its answer. */
export type PreparedRequest = OutgoingRequest & {
  readonly ca?: string | undefined;
  readonly proxy?: HttpProxy | undefined;
  /** Slack's Web API answers 200 with `{"ok": false, "error": ...}`: a failure all the same. */
  readonly okField?: boolean;
};

export type ChannelSettings = { readonly messages: number; readonly intervalMs: number; readonly timeoutMs: number };

export type Delivery = {
  /** The NotificationProvider (`namespace/name`): one channel each. */
  readonly provider: string;
  /** The NotificationProvider's type: the metric's label. */
  readonly providerType: string;
  /** Equal keys within the dedup window are sent once. */
  readonly dedupKey: string;
  readonly settings: ChannelSettings;
  /** Builds the request when its turn comes (credentials as they are then). Throws: a failure, not retried. */
  readonly prepare: () => Promise<PreparedRequest>;
  /** Told once, with an error message that names no URL or credential. */
  readonly done?: (result: DeliveryResult, error?: string) => void;
  /** Opt-in: sent with the NotificationProvider's other deliveries of a window (its spec.batch); `prepare` is then unused. */
  readonly batch?: DeliveryBatch;
};

export type DeliveryBatch = {
  readonly windowMs: number;
  readonly maxEvents: number;
  readonly message: Message;
  /**
   * Builds the requests of a batch from its deliveries' messages (in order) when its turn comes; each request carries
   * the next `count` of them. Throws: a failure of all of them, not retried.
   */
  readonly prepare: (messages: readonly Message[]) => Promise<readonly PreparedBatchRequest[]>;
};

export type PreparedBatchRequest = { readonly request: PreparedRequest; readonly count: number };

/** A failed delivery, described without its URL. */
export class DeliveryError extends Error {
  readonly retryable: boolean;
  constructor(message: string, retryable: boolean) {
    super(message);
    this.name = 'DeliveryError';
    this.retryable = retryable;
  }
}

export type DispatcherOptions = {
  readonly transport: HttpTransport;
  readonly count: (providerType: string, result: DeliveryResult) => void;
  /** Milliseconds since the epoch. */
  readonly now?: () => number;
  /** Identical messages within this window are sent once (default 5 min). */
  readonly dedupWindowMs?: number;
  /** Deliveries waiting per NotificationProvider beyond the one in flight (default 1,000); more are dropped. */
  readonly queueSize?: number;
  /** Attempts per delivery, the first included (default 4), and the first backoff (default 500 ms). */
  readonly attempts?: number;
  readonly initialBackoffMs?: number;
};

export type Dispatcher = {
  deliver(delivery: Delivery): void;
  /** Resolves when nothing is queued, gathered in a batch or in flight (tests, shutdown). */
  idle(): Promise<void>;
  /** Gives up what is queued, gathered or in flight, unreported: returns how many deliveries that was. */
  stop(): number;
};

const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * One NotificationProvider's deliveries: those waiting (a unit is one delivery, or a batch), how many deliveries
 * that is with the batch being gathered, whether a unit is in flight, and its rate.
 */
type Channel = {
  readonly waiting: Delivery[][];
  queued: number;
  gathering?: Gathering | undefined;
  busy: boolean;
  bucket: TokenBucket;
  settings: ChannelSettings;
};

/** A batch in its window: its deliveries so far and the timer that ends the window. */
type Gathering = { readonly members: Delivery[]; readonly timer: NodeJS.Timeout };

export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const now = options.now ?? Date.now;
  const dedupWindowMs = options.dedupWindowMs ?? 5 * 60_000;
  const queueSize = options.queueSize ?? 1000;
  const attempts = options.attempts ?? 4;
  const backoff = new ExponentialBackoff({ initialDelay: options.initialBackoffMs ?? 500, maxDelay: 30_000 });
  const channels = new Map<string, Channel>();
  const isDuplicate = dedupWindow(now, dedupWindowMs);
  const stopped = new AbortController();
  /** The attempts in flight and when each times out (ms since the epoch): stop() aborts them all. */
  const attemptsInFlight = new Map<AbortController, number>();
  const deadlines = deadlineWatch(attemptsInFlight);
  let pending = 0;
  let idleWaiters: (() => void)[] = [];

  const finished = (): void => {
    pending--;
    if (pending === 0) {
      for (const resolve of idleWaiters) resolve();
      idleWaiters = [];
    }
  };

  const send = sender({ transport: options.transport, attempts, backoff, stopped: stopped.signal, attemptsInFlight, deadlines });

  /** Tells each delivery of `members` its result, counted (after stop(), nothing is told), and finishes them. */
  const report = (members: readonly Delivery[], error: unknown): void => {
    for (const delivery of members) {
      if (!stopped.signal.aborted) {
        const result = error === undefined ? DeliveryResult.Sent : DeliveryResult.Failed;
        options.count(delivery.providerType, result);
        if (result === DeliveryResult.Sent) delivery.done?.(result);
        else delivery.done?.(result, describe(error));
      }
      finished();
    }
  };

  /** Runs the channel's units one after another until its queue is empty: each request waits for a token, then is sent. */
  const drain = async (channel: Channel): Promise<void> => {
    channel.busy = true;
    for (let unit = channel.waiting.shift(); unit !== undefined; unit = channel.waiting.shift()) {
      channel.queued -= unit.length;
      let requests: Awaited<ReturnType<typeof prepareUnit>> = [];
      try {
        requests = await prepareUnit(unit);
      } catch (error) {
        report(unit, error);
      }
      for (const { request, members } of requests) {
        let failure: unknown = stopped.signal.aborted ? new Error('stopped') : undefined;
        if (failure === undefined)
          try {
            if (channel.bucket.tryTake() !== 0) await channel.bucket.take(stopped.signal);
            await send(request, channel.settings.timeoutMs);
          } catch (error) {
            failure = error;
          }
        report(members, failure);
      }
      if (stopped.signal.aborted) {
        // What is still queued is given up unreported, as a stopped process would.
        for (let rest = channel.waiting.shift(); rest !== undefined; rest = channel.waiting.shift()) for (const _ of rest) finished();
        channel.queued = 0;
      }
    }
    channel.busy = false;
  };

  /** Ends the window of the channel's batch, if one is gathering: the batch joins the queue. */
  const closeBatch = (channel: Channel): void => {
    const gathering = channel.gathering;
    if (gathering === undefined) return;
    clearTimeout(gathering.timer);
    channel.gathering = undefined;
    channel.waiting.push(gathering.members);
    if (!channel.busy) void drain(channel);
  };

  /** Adds a batched delivery to the channel's batch, opening one (and its window) if none is gathering. */
  const gather = (channel: Channel, delivery: Delivery, batch: DeliveryBatch): void => {
    if (channel.gathering === undefined) {
      const timer = setTimeout(() => {
        if (channel.gathering?.timer === timer) closeBatch(channel);
      }, batch.windowMs);
      timer.unref();
      channel.gathering = { members: [], timer };
    }
    channel.gathering.members.push(delivery);
    if (channel.gathering.members.length >= batch.maxEvents) closeBatch(channel);
  };

  return {
    deliver(delivery) {
      if (stopped.signal.aborted) return;
      if (isDuplicate(`${delivery.provider}\u0000${delivery.dedupKey}`)) {
        options.count(delivery.providerType, DeliveryResult.Deduplicated);
        delivery.done?.(DeliveryResult.Deduplicated);
        return;
      }
      const channel = channelOf(channels, delivery, now);
      // One unit in flight and `queueSize` deliveries waiting behind it, in batches or not.
      if (channel.queued >= queueSize) {
        options.count(delivery.providerType, DeliveryResult.Dropped);
        delivery.done?.(DeliveryResult.Dropped, `the queue of this NotificationProvider is full (${queueSize} waiting)`);
        return;
      }
      pending++;
      channel.queued++;
      if (delivery.batch !== undefined) {
        gather(channel, delivery, delivery.batch);
        return;
      }
      // Not batched (any more): what was gathered goes first, in the order it came.
      closeBatch(channel);
      channel.waiting.push([delivery]);
      if (!channel.busy) void drain(channel);
    },
    idle() {
      if (pending === 0) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    stop() {
      const givenUp = pending;
      stopped.abort();
      for (const abort of attemptsInFlight.keys()) abort.abort();
      deadlines.disarm();
      // Batches in their window are given up too: their deliveries were never sent.
      for (const channel of channels.values()) {
        const gathering = channel.gathering;
        if (gathering === undefined) continue;
        clearTimeout(gathering.timer);
        channel.gathering = undefined;
        channel.queued -= gathering.members.length;
        for (const _ of gathering.members) finished();
      }
      return givenUp;
    },
  };
}

/** The provider's channel, made on its first delivery; a changed rate starts a new bucket, the queue stays. */
function channelOf(channels: Map<string, Channel>, delivery: Delivery, now: () => number): Channel {
  const existing = channels.get(delivery.provider);
  if (existing !== undefined) {
    // A changed rate starts a new bucket; the queue stays.
    if (existing.settings.messages !== delivery.settings.messages || existing.settings.intervalMs !== delivery.settings.intervalMs)
      existing.bucket = new TokenBucket(delivery.settings.messages, delivery.settings.intervalMs, now);
    existing.settings = delivery.settings;
    return existing;
  }
  const channel: Channel = {
    waiting: [],
    queued: 0,
    busy: false,
    bucket: new TokenBucket(delivery.settings.messages, delivery.settings.intervalMs, now),
    settings: delivery.settings,
  };
  channels.set(delivery.provider, channel);
  return channel;
}

/** The requests of a unit: one delivery's, or a batch's (each with the deliveries it carries). */
async function prepareUnit(unit: readonly Delivery[]): Promise<readonly { request: PreparedRequest; members: readonly Delivery[] }[]> {
  try {
    const [first] = unit;
    if (first === undefined) return [];
    if (first.batch === undefined) return [{ request: await first.prepare(), members: unit }];
    const messages = unit.map((d) => {
      if (d.batch === undefined) throw new Error('a batch holds a delivery that is not batched');
      return d.batch.message;
    });
    let at = 0;
    const requests = (await first.batch.prepare(messages)).map(({ request, count }) => ({ request, members: unit.slice(at, (at += count)) }));
    if (at !== unit.length) throw new Error(`the batch's requests carry ${at} of its ${unit.length} messages`);
    return requests;
  } catch (error) {
    throw new DeliveryError(error instanceof Error ? error.message : String(error), false);
  }
}

/** What sender() needs of the dispatcher: the transport, the retry policy, and the deadlines of attempts in flight. */
type SenderOptions = {
  readonly transport: DispatcherOptions['transport'];
  readonly attempts: number;
  readonly backoff: ExponentialBackoff<unknown>;
  readonly stopped: AbortSignal;
  readonly attemptsInFlight: Map<AbortController, number>;
  readonly deadlines: { arm(): void };
};

/** Sends one request: its attempts, each under its timeout, with backoff between them while they fail in a way worth retrying. */
function sender({
  transport,
  attempts,
  backoff,
  stopped,
  attemptsInFlight,
  deadlines,
}: SenderOptions): (request: PreparedRequest, timeoutMs: number) => Promise<void> {
  /** One attempt under its timeout: the abort is the timer's (or stop's), never the answer's. */
  const attempt = async (request: PreparedRequest, timeoutMs: number): Promise<void> => {
    const abort = new AbortController();
    attemptsInFlight.set(abort, Date.now() + timeoutMs);
    deadlines.arm();
    try {
      await sendOnce(transport, request, abort.signal);
    } finally {
      attemptsInFlight.delete(abort);
    }
  };

  const send = async (request: PreparedRequest, timeoutMs: number): Promise<void> => {
    let wait: IBackoff<unknown> | undefined;
    for (let tries = 1; ; tries++) {
      try {
        await attempt(request, timeoutMs);
        return;
      } catch (error) {
        const retryable = !(error instanceof DeliveryError) || error.retryable;
        if (!retryable || tries >= attempts || stopped.aborted) throw error;
      }
      wait = (wait ?? backoff).next(undefined);
      await sleep(wait.duration, stopped);
    }
  };
  return send;
}

/** Whether a key was seen within the window (and remembers it): keys are kept in the order they came, so the old ones go first. */
function dedupWindow(now: () => number, windowMs: number): (key: string) => boolean {
  const recent = new Map<string, number>();
  return (key) => {
    const at = now();
    for (const [k, t] of recent) {
      if (at - t < windowMs) break;
      recent.delete(k);
    }
    if (recent.has(key)) return true;
    recent.set(key, at);
    return false;
  };
}

/**
 * Aborts the attempts whose deadline passed. One timer for all of them, left to run out rather than set and
 * cleared per message (a message a minute or a thousand a second cost the same one wake-up per timeout): when it
 * fires it aborts what is late and sets itself again for the next deadline, or not at all when nothing is in flight.
 */
function deadlineWatch(inFlight: Map<AbortController, number>): { arm(): void; disarm(): void } {
  let timer: NodeJS.Timeout | undefined;
  let firesAt = Infinity;
  const arm = (): void => {
    let next = Infinity;
    for (const deadline of inFlight.values()) next = Math.min(next, deadline);
    if (next >= firesAt || next === Infinity) return;
    clearTimeout(timer);
    firesAt = next;
    timer = setTimeout(fire, Math.max(0, next - Date.now()));
    timer.unref();
  };
  const fire = (): void => {
    timer = undefined;
    firesAt = Infinity;
    const now = Date.now();
    for (const [abort, deadline] of inFlight) if (deadline <= now) abort.abort();
    arm();
  };
  return {
    arm,
    disarm: () => {
      clearTimeout(timer);
      timer = undefined;
      firesAt = Infinity;
    },
  };
}

/** One attempt: 2xx is delivered (and, for Slack's Web API, `ok` is true); 429, 5xx and network errors may be retried. */
async function sendOnce(transport: HttpTransport, request: PreparedRequest, signal: AbortSignal): Promise<void> {
  let response;
  try {
    response = await transport.request({
      url: request.url,
      method: request.method,
      headers: { ...request.headers, 'user-agent': 'syncline-notifications' },
      body: Buffer.from(request.body),
      signal,
      ca: request.ca,
      proxy: request.proxy,
    });
  } catch (error) {
    if (signal.aborted) throw new DeliveryError('the request timed out', true);
    const code = (error as { code?: unknown }).code;
    // Node's messages name the host and port: only the error code leaves here.
    throw new DeliveryError(
      `the receiver could not be reached (${typeof code === 'string' ? code : error instanceof Error ? error.name : 'network error'})`,
      true,
    );
  }
  const body = await readBody(response.body);
  if (response.statusCode === 429 || response.statusCode >= 500) throw new DeliveryError(`the receiver answered HTTP ${response.statusCode}`, true);
  if (response.statusCode < 200 || response.statusCode >= 300) throw new DeliveryError(`the receiver answered HTTP ${response.statusCode}`, false);
  if (request.okField === true) {
    let answer: { ok?: unknown; error?: unknown } = {};
    try {
      answer = JSON.parse(body) as typeof answer;
    } catch {
      throw new DeliveryError('the receiver answered HTTP 200 without a JSON body', false);
    }
    if (answer.ok === true) return;
    // eslint-disable-next-line no-restricted-syntax -- shortens the receiver's error code for the message; the decision is on the code itself
    const code = typeof answer.error === 'string' ? answer.error.replace(/[^a-z0-9_]/gi, '').slice(0, 64) : 'ok is not true';
    throw new DeliveryError(`the receiver refused the message (${code})`, answer.error === 'ratelimited');
  }
}

/** The answer's body as text, its first 64 KiB (the rest is read and dropped, so the connection can be kept). */
async function readBody(body: AsyncIterable<Uint8Array>): Promise<string> {
  if (body instanceof Readable) return readStream(body);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < MAX_RESPONSE_BYTES) chunks.push(chunk);
    size += chunk.length;
  }
  return Buffer.concat(chunks).toString('utf8').slice(0, MAX_RESPONSE_BYTES);
}

/**
 * readBody for Node's own response streams, by their events: an async iterator costs a promise per chunk and more
 * to set up than the one or two chunks of a receiver's answer take to read. Ends as the iterator would: an error,
 * or a stream closed before its end, rejects.
 */
function readStream(stream: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    stream.on('data', (chunk: Buffer) => {
      if (size < MAX_RESPONSE_BYTES) chunks.push(chunk);
      size += chunk.length;
    });
    stream.once('end', () => {
      ended = true;
      resolve(Buffer.concat(chunks).toString('utf8').slice(0, MAX_RESPONSE_BYTES));
    });
    stream.once('error', reject);
    stream.once('close', () => {
      if (!ended) reject(new Error('the answer ended early'));
    });
  });
}

function describe(error: unknown): string {
  if (error instanceof DeliveryError) return error.message;
  return 'the delivery failed';
}

/** At most `messages` per `intervalMs`, in a burst of up to `messages`; take() waits for a token. */
export class TokenBucket {
  #tokens: number;
  #at: number;
  readonly #capacity: number;
  readonly #perMs: number;
  readonly #now: () => number;

  constructor(messages: number, intervalMs: number, now: () => number = Date.now) {
    this.#capacity = messages;
    this.#tokens = messages;
    this.#perMs = messages / intervalMs;
    this.#now = now;
    this.#at = now();
  }

  /** Takes a token now if there is one; otherwise how long until there is. */
  tryTake(): number {
    const at = this.#now();
    this.#tokens = Math.min(this.#capacity, this.#tokens + (at - this.#at) * this.#perMs);
    this.#at = at;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - this.#tokens) / this.#perMs);
  }

  async take(signal: AbortSignal): Promise<void> {
    for (;;) {
      const waitMs = this.tryTake();
      if (waitMs === 0) return;
      await sleep(waitMs, signal);
    }
  }
}

/** Resolves after `ms`; rejects at once when `signal` aborts (and leaves no listener behind either way). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(new Error('stopped'));
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new Error('stopped'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
