// The SSH edge (ssh2, pure JS): one connection per conversation, authenticated with the Secret's private key,
// the server's host key checked against the Secret's known_hosts before anything else is sent (no trust on
// first use), then `git-upload-pack '<path>'` on an exec channel whose stdout carries the same pkt-lines as
// smart HTTP (upload-pack.ts reads them). The response counts against the operation's byte budget, a silent
// server times out, and connecting (up to the ref advertisement) is retried on transient failures like an
// HTTP request. No key, passphrase or known_hosts content ever reaches a message.
import type { ClientChannel, ConnectConfig } from 'ssh2';
import { GitSourceError, GitSourceErrorCode, redact } from './errors.ts';
import type { TransportLimits } from './http.ts';
import { isTransient } from './http.ts';
import { hostKeyAlgorithms, parseKnownHosts, verifyHostKey } from './known-hosts.ts';
import type { HostKeyVerdict } from './known-hosts.ts';
import type { SshRepoUrl } from './repo-url.ts';
import { PktReader, readAdvertisement } from './upload-pack.ts';
import type { UploadPackConversation, UploadPackTransport } from './upload-pack.ts';

export interface SshCredentials {
  /** The private key (OpenSSH or PEM). */
  identity: string;
  /** known_hosts lines for the server. */
  knownHosts: string;
  passphrase?: string | undefined;
  /** Where the key came from, for messages (e.g. `Secret team-a/git-auth`). */
  from?: string | undefined;
}

export interface SshOptions extends TransportLimits {
  target: SshRepoUrl;
  credentials: SshCredentials;
}

/** The strings that must never appear in a message: the key, each of its lines, the passphrase. */
export function sshSecrets(credentials: SshCredentials): string[] {
  const lines = credentials.identity
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l.length >= 8 && !l.startsWith('-----'));
  return [credentials.identity, ...lines, ...(credentials.passphrase === undefined || credentials.passphrase === '' ? [] : [credentials.passphrase])];
}

/** Quotes a path the way git does for the remote shell: '…', with ' and ! escaped. */
export function shellQuote(path: string): string {
  return `'${path.replace(/'/g, `'\\''`).replace(/!/g, `'\\!'`)}'`;
}

/** What a conversation needs of its connection: the options, the overall deadline, and how failures are made. */
type SshContext = {
  readonly opts: SshOptions;
  readonly signal: AbortSignal;
  readonly fail: (code: GitSourceErrorCode, message: string) => GitSourceError;
  readonly timedOut: () => GitSourceError;
};

/**
 * One upload-pack conversation over an exec'd channel: the advertisement, then one request; the body is read with
 * the idle timeout, the overall deadline (ctx.signal) and the byte budget, and upload-pack's exit status decides
 * whether it ended well.
 */
async function converse(ctx: SshContext, channel: ClientChannel, end: () => Promise<void>): Promise<UploadPackConversation> {
  const { opts, signal, fail, timedOut } = ctx;
  let received = 0;
  let stderr = '';
  let exitCode: number | undefined;
  channel.stderr.on('data', (c: Buffer) => {
    if (stderr.length < 4096) stderr += c.toString('utf8');
  });
  channel.on('exit', (code: unknown) => {
    if (typeof code === 'number') exitCode = code;
  });
  channel.on('error', () => undefined);
  const channelClosed = new Promise<void>((resolve) => channel.once('close', () => resolve()));

  async function* body(): AsyncGenerator<Uint8Array> {
    const it = (channel as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    let completed = false;
    try {
      for (;;) {
        const next = await withIdleTimeout(() => it.next());
        if (next.done === true) {
          completed = true;
          // upload-pack's exit status comes after the end of its output.
          await withIdleTimeout(() => channelClosed);
          if (exitCode !== undefined && exitCode !== 0) throw exited(exitCode);
          return;
        }
        received += next.value.byteLength;
        if (received > opts.maxResponseBytes) {
          throw fail(GitSourceErrorCode.LimitExceeded, `${opts.shownRepo}: the server sent more than ${opts.maxResponseBytes} bytes; refusing the rest`);
        }
        yield next.value;
      }
    } finally {
      if (!completed) await it.return?.().catch(() => undefined);
    }
  }

  function exited(code: number): GitSourceError {
    const said = stderr.trim().replace(/[^\x20-\x7e]/g, '?');
    const shown = said.length > 200 ? `${said.slice(0, 200)}…` : said;
    if (/does not appear to be a git repository|not a git repository|no such file|not found/i.test(said)) {
      return fail(GitSourceErrorCode.RepoNotFound, `${opts.shownRepo}: repository not found (${shown})`);
    }
    return fail(GitSourceErrorCode.ServerError, `${opts.shownRepo}: git-upload-pack exited with ${code}${shown === '' ? '' : `: ${shown}`}`);
  }

  async function withIdleTimeout<T>(step: () => Promise<T>): Promise<T> {
    if (signal.aborted) throw timedOut();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await Promise.race([
        step(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(fail(GitSourceErrorCode.Timeout, `${opts.shownRepo}: no response from the server for ${opts.idleTimeoutMs} ms`)),
            opts.idleTimeoutMs,
          );
          onAbort = () => reject(timedOut());
          signal.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
    }
  }

  const reader = new PktReader(body());
  const advertisement = await readAdvertisement(reader, opts.shownRepo);
  let requested = false;
  let ended = false;
  return {
    advertisement,
    async request(requestBody, consume) {
      if (requested) throw new Error('one request per SSH conversation');
      requested = true;
      channel.write(requestBody);
      return consume(reader);
    },
    async close() {
      if (ended) return;
      ended = true;
      // A flush instead of wants: upload-pack ends cleanly.
      if (!requested && channel.writable) channel.end('0000');
      else channel.end();
      await end();
    },
  };
}

export function sshUploadPack(opts: SshOptions): UploadPackTransport {
  const signal = AbortSignal.timeout(opts.timeoutMs);
  const deadline = performance.now() + opts.timeoutMs;
  const { target, credentials } = opts;
  const shownHost = `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
  const from = credentials.from ?? 'the auth Secret';
  const secrets = sshSecrets(credentials);
  const fail = (code: GitSourceErrorCode, message: string): GitSourceError => {
    const err = new GitSourceError(code, redact(message, secrets));
    opts.onFailure(err);
    return err;
  };
  const known = parseKnownHosts(credentials.knownHosts);
  const timedOut = (): GitSourceError => fail(GitSourceErrorCode.Timeout, `${opts.shownRepo}: the operation timed out`);

  async function open(): Promise<UploadPackConversation> {
    if (known.entries.length === 0) {
      const unreadable = known.invalid.length === 0 ? '' : ` (unreadable lines: ${known.invalid.map((i) => `${i.line}: ${i.reason}`).join('; ')})`;
      throw fail(
        GitSourceErrorCode.InvalidAuth,
        `${opts.shownRepo}: known_hosts in ${from} lists no host key${unreadable}; SSH needs the server's host key (host keys are never trusted on first use)`,
      );
    }
    for (let attempt = 1; ; attempt++) {
      try {
        return await connect();
      } catch (err) {
        if (signal.aborted) throw timedOut();
        const wait = Math.min(opts.retry.maxDelayMs, opts.retry.baseDelayMs * 2 ** (attempt - 1)) * (0.5 + opts.random() / 2);
        if (attempt >= opts.retry.attempts || !isTransient(err) || performance.now() + wait >= deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  async function connect(): Promise<UploadPackConversation> {
    // Loaded on the first SSH connection only: ssh2 adds ~15 MB to the RSS of every process that imports it,
    // and most installations never use an ssh:// repo.
    const { Client } = await import('ssh2');
    const client = new Client();
    let verdict: HostKeyVerdict | undefined;
    const algorithms = hostKeyAlgorithms(known, target.host, target.port);
    const config: ConnectConfig = {
      host: target.host,
      port: target.port,
      username: target.user,
      privateKey: credentials.identity,
      ...(credentials.passphrase === undefined || credentials.passphrase === '' ? {} : { passphrase: credentials.passphrase }),
      readyTimeout: Math.max(1, Math.min(opts.idleTimeoutMs, deadline - performance.now())),
      tryKeyboard: false,
      hostVerifier: (key: Buffer) => {
        verdict = verifyHostKey(known, target.host, target.port, key);
        return verdict.ok;
      },
      ...(algorithms.length > 0 ? { algorithms: { serverHostKey: algorithms as NonNullable<ConnectConfig['algorithms']>['serverHostKey'] } } : {}),
    };
    const onAbort = (): void => {
      client.destroy();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    let connected = false;
    client.once('connect', () => {
      connected = true;
    });
    const end = async (): Promise<void> => {
      signal.removeEventListener('abort', onAbort);
      client.end();
      // A client that never connected never closes: wait a little for a clean goodbye, then tear it down.
      let timer: NodeJS.Timeout | undefined;
      if (connected) await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2_000)))]);
      clearTimeout(timer);
      client.destroy();
    };
    try {
      await new Promise<void>((resolve, reject) => {
        client.once('ready', () => resolve());
        client.once('error', (err: Error & { level?: string }) => reject(connectError(err, verdict)));
        try {
          client.connect(config);
        } catch (err) {
          // ssh2 reads the key synchronously; its messages name the problem, never the key.
          reject(
            fail(
              GitSourceErrorCode.InvalidAuth,
              `${opts.shownRepo}: the identity in ${from} is not a usable private key (${err instanceof Error ? err.message : String(err)})`,
            ),
          );
        }
      });
      // Errors after the handshake surface through the channel; keep the client from throwing.
      client.on('error', () => undefined);
      const channel = await new Promise<ClientChannel>((resolve, reject) => {
        client.exec(`git-upload-pack ${shellQuote(target.path)}`, (err, ch) => (err === undefined ? resolve(ch) : reject(err)));
      });
      const conversation = await converse({ opts, signal, fail, timedOut }, channel, end);
      return conversation;
    } catch (err) {
      await end();
      if (signal.aborted) throw timedOut();
      throw err;
    }
  }

  function connectError(err: Error & { level?: string; code?: unknown }, verdict: HostKeyVerdict | undefined): Error {
    if (verdict !== undefined && !verdict.ok) return fail(GitSourceErrorCode.AuthFailed, `${opts.shownRepo}: ${verdict.message}`);
    if (err.level === 'client-authentication') {
      return fail(
        GitSourceErrorCode.AuthFailed,
        `${opts.shownRepo}: ssh authentication as ${target.user}@${shownHost} failed: the server refused the key from ${from}`,
      );
    }
    if (err.level === 'client-timeout') return fail(GitSourceErrorCode.Timeout, `${opts.shownRepo}: the SSH handshake with ${shownHost} timed out`);
    if (err.level === 'protocol' || err.level === 'handshake') {
      return fail(GitSourceErrorCode.ServerError, `${opts.shownRepo}: the SSH handshake with ${shownHost} failed: ${err.message.slice(0, 200)}`);
    }
    // Socket errors keep their code (ECONNREFUSED, …): transient, and named by the caller.
    return err;
  }

  return { signal, open };
}
