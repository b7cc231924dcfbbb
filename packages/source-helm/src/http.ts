// GET over HTTP(S) for charts: redirects followed here (at most 5), the Authorization header sent only to the
// origin it was given for (Helm's default: no pass-credentials to another host), a body bounded in bytes, a
// request bounded in time, and failures turned into ChartSourceError codes.
import { nodeHttpTransport, type HttpTransport } from '@syncline/source-git';
import { ChartSourceError, ChartSourceErrorCode } from './errors.ts';

export interface GetRequest {
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent to this origin only (scheme://host:port). */
  readonly authorization?: { readonly origin: string; readonly value: string };
  readonly ca?: string;
  readonly maxBytes: number;
  readonly timeoutMs: number;
  /** How the thing fetched is named in messages (never with credentials). */
  readonly what: string;
}

export interface GetResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** The URL that answered (after redirects). */
  readonly url: string;
}

const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

/** One GET; any status is returned (the caller decides), transport failures throw. */
export async function httpGet(transport: HttpTransport = nodeHttpTransport, request: GetRequest): Promise<GetResponse> {
  let url = request.url;
  for (let hop = 0; hop <= 5; hop++) {
    const target = new URL(url);
    const headers: Record<string, string> = { 'user-agent': 'syncline', ...request.headers };
    if (request.authorization !== undefined && target.origin === request.authorization.origin) headers['authorization'] = request.authorization.value;
    const signal = AbortSignal.timeout(request.timeoutMs);
    let response;
    try {
      response = await transport.request({ url, method: 'GET', headers, body: undefined, signal, ca: request.ca });
    } catch (error) {
      throw transportError(error, request.what, signal);
    }
    const location = response.headers['location'];
    if ([301, 302, 303, 307, 308].includes(response.statusCode) && location !== undefined) {
      for await (const chunk of response.body) void chunk;
      const next = new URL(location, url);
      if (next.protocol !== 'https:' && next.protocol !== target.protocol)
        throw new ChartSourceError(ChartSourceErrorCode.ServerError, `${request.what}: a redirect from ${target.protocol} to ${next.protocol} is refused`);
      url = next.toString();
      continue;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of response.body) {
        size += chunk.length;
        if (size > request.maxBytes)
          throw new ChartSourceError(ChartSourceErrorCode.LimitExceeded, `${request.what}: the answer is over the limit of ${request.maxBytes} bytes`);
        chunks.push(Buffer.from(chunk));
      }
    } catch (error) {
      if (error instanceof ChartSourceError) throw error;
      throw transportError(error, request.what, signal);
    }
    return { status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks), url };
  }
  throw new ChartSourceError(ChartSourceErrorCode.ServerError, `${request.what}: more than 5 redirects`);
}

function transportError(error: unknown, what: string, signal: AbortSignal): ChartSourceError {
  if (signal.aborted) return new ChartSourceError(ChartSourceErrorCode.Timeout, `${what}: no answer in time`);
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (TLS_CODES.has(code))
    return new ChartSourceError(
      ChartSourceErrorCode.UntrustedCertificate,
      `${what}: the server's certificate does not verify (${code}); a private CA goes in the Secret's ca.crt`,
    );
  return new ChartSourceError(ChartSourceErrorCode.Unreachable, `${what}: unreachable (${code === '' ? 'connection failed' : code})`);
}

/** A status that is not 2xx, as a ChartSourceError naming what was asked for. */
export function statusError(status: number, what: string): ChartSourceError {
  if (status === 401 || status === 403)
    return new ChartSourceError(ChartSourceErrorCode.AuthFailed, `${what}: HTTP ${status} (check the credentials in spec.source.helm.repository.secretRef)`);
  if (status === 404) return new ChartSourceError(ChartSourceErrorCode.ChartNotFound, `${what}: not found (HTTP 404)`);
  if (status === 429 || status >= 500) return new ChartSourceError(ChartSourceErrorCode.ServerError, `${what}: HTTP ${status}`);
  return new ChartSourceError(ChartSourceErrorCode.ServerError, `${what}: unexpected HTTP ${status}`);
}
