// Key services reached over the network: Vault (or OpenBao) transit, through its HTTP API as sops' hcvault
// package calls it, and AWS KMS Decrypt, through its JSON API signed with SigV4 (a few lines of node:crypto
// instead of the AWS SDK, whose KMS client alone would add megabytes to the image for one call).
// A failure says which service and why, never the token, the credentials or the data key.
import { createHash, createHmac } from 'node:crypto';
import type { AwsCredentials, SopsKeyRing } from './keys.ts';

export interface KeyServiceOptions {
  /** HTTP client (tests inject one; default global fetch). */
  readonly fetch?: typeof fetch;
  /** Per-request timeout. Default 15 s. */
  readonly timeoutMs?: number;
  /** The KMS endpoint of a region; default `https://kms.<region>.amazonaws.com` (tests and private endpoints override it). */
  readonly kmsEndpoint?: (region: string) => string;
  /**
   * The operator's own AWS credentials, used for KMS keys only when the key Secret holds none and the admin
   * allowed it (`--sops-allow-environment-credentials`).
   */
  readonly environmentAws?: AwsCredentials | undefined;
}

/** Why a key service did not give the data key; `transient` means retrying later may help. */
export class KeyServiceFailure extends Error {
  readonly service: string;
  readonly transient: boolean;

  constructor(service: string, detail: string, transient: boolean) {
    super(`${service}: ${detail}`);
    this.service = service;
    this.transient = transient;
  }
}

async function post(options: KeyServiceOptions, service: string, url: string, init: { headers: Record<string, string>; body: string }): Promise<unknown> {
  const fetcher = options.fetch ?? fetch;
  let response: Response;
  try {
    response = await fetcher(url, {
      method: 'POST',
      headers: init.headers,
      body: init.body,
      redirect: 'error',
      signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
    });
  } catch (error) {
    const code = (error as { cause?: { code?: unknown } }).cause?.code;
    const why = (error as Error).name === 'TimeoutError' ? 'timed out' : typeof code === 'string' ? `unreachable (${code})` : 'unreachable';
    throw new KeyServiceFailure(service, why, true);
  }
  const text = await response.text();
  if (response.status >= 500 || response.status === 429) throw new KeyServiceFailure(service, `answered HTTP ${response.status}`, true);
  if (response.status >= 400) throw new KeyServiceFailure(service, `refused the request (HTTP ${response.status}${publicReason(text)})`, false);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new KeyServiceFailure(service, 'answered with something that is not JSON', true);
  }
}

/** The error type or code a service names (e.g. `AccessDeniedException`, `permission denied`); never echoes request data. */
function publicReason(body: string): string {
  try {
    const parsed = JSON.parse(body) as { __type?: unknown; errors?: unknown };
    if (typeof parsed.__type === 'string') return `: ${parsed.__type.split('#').pop()?.slice(0, 80) ?? ''}`;
    if (Array.isArray(parsed.errors) && typeof parsed.errors[0] === 'string' && /^[\w .,'-]{1,80}$/.test(parsed.errors[0])) return `: ${parsed.errors[0]}`;
  } catch {
    // Not JSON: say nothing more than the status.
  }
  return '';
}

function base64Field(value: unknown, service: string, field: string): Uint8Array {
  if (typeof value !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) throw new KeyServiceFailure(service, `answered without ${field}`, false);
  // A plain Uint8Array, not a Buffer: the Shamir combiner takes nothing else for a key group's share.
  return new Uint8Array(Buffer.from(value, 'base64'));
}

/** Vault transit: POST /v1/<engine>/decrypt/<key> with the ring's token. */
export async function unwrapVault(
  ring: SopsKeyRing,
  key: { address: string; enginePath: string; keyName: string; enc: string },
  options: KeyServiceOptions,
): Promise<Uint8Array> {
  const address = key.address.replace(/\/+$/, '');
  const service = `Vault ${address} ${key.enginePath}/keys/${key.keyName}`;
  if (ring.vaultToken === undefined) throw new KeyServiceFailure(service, `${ring.source} holds no sops.vault-token`, false);
  if (ring.vaultAddresses !== undefined && !ring.vaultAddresses.includes(address)) {
    throw new KeyServiceFailure(service, `${ring.source} sops.vault-addresses does not list this address, so the token is not sent to it`, false);
  }
  const url = `${address}/v1/${key.enginePath.replace(/^\/+|\/+$/g, '')}/decrypt/${encodeURIComponent(key.keyName)}`;
  const body = (await post(options, service, url, {
    headers: { 'X-Vault-Token': ring.vaultToken, 'Content-Type': 'application/json' },
    body: JSON.stringify({ ciphertext: key.enc }),
  })) as { data?: { plaintext?: unknown } };
  return base64Field(body.data?.plaintext, service, 'plaintext');
}

const ARN = /^arn:aws[\w-]*:kms:([^:]+):[0-9]+:(key|alias)\/.+$/;

/** AWS KMS Decrypt with the ring's credentials (or the operator's, when allowed). */
export async function unwrapKms(
  ring: SopsKeyRing,
  key: { arn: string; role: string | undefined; context: Readonly<Record<string, string>>; enc: string },
  options: KeyServiceOptions,
): Promise<Uint8Array> {
  const service = `AWS KMS ${key.arn}`;
  const region = ARN.exec(key.arn)?.[1];
  if (region === undefined) throw new KeyServiceFailure(service, 'the key is not a KMS key ARN', false);
  if (key.role !== undefined)
    throw new KeyServiceFailure(service, 'assuming a role for a KMS key is not supported; give the Secret credentials that may use the key', false);
  const credentials = ring.aws ?? options.environmentAws;
  if (credentials === undefined) {
    throw new KeyServiceFailure(service, `${ring.source} holds no sops.aws-kms credentials (the operator's own are used only when its admin allows it)`, false);
  }
  const endpoint = (options.kmsEndpoint ?? ((r: string) => `https://kms.${r}.amazonaws.com`))(region);
  const body = JSON.stringify({ CiphertextBlob: key.enc, KeyId: key.arn, ...(Object.keys(key.context).length > 0 ? { EncryptionContext: key.context } : {}) });
  const headers = signV4({ credentials, region, service: 'kms', endpoint, body, target: 'TrentService.Decrypt', now: new Date() });
  const answer = (await post(options, service, endpoint, { headers, body })) as { Plaintext?: unknown };
  return base64Field(answer.Plaintext, service, 'Plaintext');
}

const sha256 = (data: string): string => createHash('sha256').update(data, 'utf8').digest('hex');
const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

/** AWS Signature Version 4 for one JSON POST to the endpoint's root path. */
export function signV4(request: {
  credentials: AwsCredentials;
  region: string;
  service: string;
  endpoint: string;
  body: string;
  target: string;
  now: Date;
}): Record<string, string> {
  const url = new URL(request.endpoint);
  const amzDate = request.now.toISOString().replace(/[:-]|\.\d{3}/g, '');
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = {
    'content-type': 'application/x-amz-json-1.1',
    host: url.host,
    'x-amz-date': amzDate,
    'x-amz-target': request.target,
  };
  if (request.credentials.sessionToken !== undefined) headers['x-amz-security-token'] = request.credentials.sessionToken;
  const names = Object.keys(headers).sort();
  const canonical = [
    'POST',
    url.pathname === '' ? '/' : url.pathname,
    '',
    ...names.map((name) => `${name}:${headers[name]?.trim() ?? ''}`),
    '',
    names.join(';'),
    sha256(request.body),
  ].join('\n');
  const scope = `${day}/${request.region}/${request.service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${request.credentials.secretAccessKey}`, day), request.region), request.service), 'aws4_request');
  const signature = createHmac('sha256', signingKey).update(toSign, 'utf8').digest('hex');
  // fetch sets Host from the URL itself (the same value that was signed).
  const { host: _signedHost, ...sent } = headers;
  return {
    ...sent,
    authorization: `AWS4-HMAC-SHA256 Credential=${request.credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`,
  };
}
