// Decryption of a ConfigSync's source: every SOPS-encrypted file of the snapshot is decrypted in memory
// (never written anywhere) with the keys of the Secret spec.decryption.secretRef names, in the sync's own
// namespace. A sync without spec.decryption that meets an encrypted file fails naming it: ciphertext is never
// applied. spec.valuesFiles and targets[].valuesFiles are read from the same snapshot and decrypted the same way.
import { KubeApiError, type KubeRest } from '@syncline/kube';
import {
  DataKeyCache,
  DecryptedFileCache,
  SopsError,
  SopsErrorCause,
  decryptSopsFile,
  isSopsEncrypted,
  layerValues,
  parseKeySecret,
  parseValues,
  type KeyServiceOptions,
  type SopsKeyRing,
  type Values,
} from '@syncline/render';
import type { ConfigSyncSpec } from '@syncline/api';

/** What the operator gives every sync's decryption: key-service settings and the in-memory data key cache. */
export type DecryptionContext = {
  readonly services: KeyServiceOptions;
  readonly cache: DataKeyCache;
  /** Decrypted files by (path, ciphertext, keys) digest: a steady sync decrypts nothing again. Memory only. */
  readonly decrypted: DecryptedFileCache;
  /** Parsed key rings by `namespace/name`, with the Secret's resourceVersion they were read at. */
  readonly rings: Map<string, { resourceVersion: string; ring: SopsKeyRing }>;
  /** The key Secret's resourceVersion as the reference watch last saw it (lets a steady sync skip the GET). */
  readonly watchedVersion?: (namespace: string, name: string) => string | undefined;
};

export function createDecryptionContext(
  services: KeyServiceOptions = {},
  watchedVersion?: (namespace: string, name: string) => string | undefined,
): DecryptionContext {
  return {
    services,
    cache: new DataKeyCache(),
    decrypted: new DecryptedFileCache(),
    rings: new Map(),
    ...(watchedVersion === undefined ? {} : { watchedVersion }),
  };
}

/** A stalling (input must change) or retryable (a key service was unreachable) decryption failure; the message carries no secret. */
export class DecryptionFailure extends Error {
  readonly retryable: boolean;
  readonly code: SopsErrorCause;
  constructor(code: SopsErrorCause, message: string, retryable: boolean) {
    super(message);
    this.code = code;
    this.retryable = retryable;
  }
}

const fromSops = (error: SopsError): DecryptionFailure => new DecryptionFailure(error.code, error.message, error.retryable);

type SourceFile = { readonly path: string; readonly content: Uint8Array };

/** The key ring of the sync, or undefined when it has no spec.decryption. Reads the Secret only when it changed. */
export async function readKeyRing(rest: KubeRest, context: DecryptionContext, namespace: string, spec: ConfigSyncSpec): Promise<SopsKeyRing | undefined> {
  const name = spec.decryption?.secretRef?.name;
  if (spec.decryption === undefined) return undefined;
  if (name === undefined) {
    // No Secret: only the operator's own AWS credentials (when the admin allowed them) can open files.
    return {
      source: 'the operator environment',
      age: [],
      pgp: [],
      vaultToken: undefined,
      vaultAddresses: undefined,
      aws: undefined,
      fingerprint: 'environment',
    };
  }
  const key = `${namespace}/${name}`;
  const known = context.rings.get(key);
  const watched = context.watchedVersion?.(namespace, name);
  if (known !== undefined && watched !== undefined && known.resourceVersion === watched) return known.ring;
  let secret: { metadata?: { resourceVersion?: string }; data?: Record<string, string> };
  try {
    secret = await rest.request({ method: 'GET', path: `/api/v1/namespaces/${namespace}/secrets/${name}` });
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) {
      throw new DecryptionFailure(SopsErrorCause.KeySecretInvalid, `the Secret ${key} named in spec.decryption.secretRef does not exist`, false);
    }
    throw error;
  }
  const resourceVersion = secret.metadata?.resourceVersion ?? '';
  if (known !== undefined && known.resourceVersion === resourceVersion) return known.ring;
  const data = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]));
  try {
    const ring = await parseKeySecret(`Secret ${key}`, data);
    context.rings.set(key, { resourceVersion, ring });
    return ring;
  } catch (error) {
    if (error instanceof SopsError) throw fromSops(error);
    throw error;
  }
}

/** Decrypted files, and the encrypted ones outside the rendered paths that could not be opened (left out). */
export type DecryptedFiles = { readonly files: SourceFile[]; readonly withheld: readonly string[] };

const under = (path: string, root: string): boolean => root === '' || path === root || path.startsWith(`${root}/`);

/**
 * Snapshot files found not encrypted. The snapshot reader hands the same file objects to every read of a path (read
 * only: nothing changes a file's bytes), so a resync does not scan their text again; a file read anew is another
 * object and is looked at.
 */
const plainFiles = new WeakSet<object>();

/**
 * The files with every encrypted one replaced by its plaintext; files that are not encrypted are handed on as
 * they are. An engine reads the whole snapshot (an overlay reaches bases elsewhere), which may hold files
 * encrypted for other teams' keys: an encrypted file under one of `roots` (the paths the targets render) must
 * decrypt or the sync fails, one outside them that does not decrypt is left out of what the engine sees and
 * named in `withheld` (a render that needs it then fails on the missing file, never on ciphertext).
 */
export async function decryptFiles(
  context: DecryptionContext,
  files: readonly { readonly path: string; readonly content: Uint8Array | string }[],
  ring: SopsKeyRing | undefined,
  roots: readonly string[] = [''],
): Promise<DecryptedFiles> {
  const out: SourceFile[] = [];
  const withheld: string[] = [];
  for (const file of files) {
    if (plainFiles.has(file) || !isSopsEncrypted(file.path, file.content)) {
      if (typeof file.content !== 'string') plainFiles.add(file);
      out.push(typeof file.content === 'string' ? { path: file.path, content: new Uint8Array(Buffer.from(file.content, 'utf8')) } : (file as SourceFile));
      continue;
    }
    try {
      const plain = await decryptSopsFile({
        path: file.path,
        content: file.content,
        keys: ring,
        services: context.services,
        cache: context.cache,
        decrypted: context.decrypted,
      });
      out.push({ path: file.path, content: typeof plain === 'string' ? new Uint8Array(Buffer.from(plain, 'utf8')) : plain });
    } catch (error) {
      const strict = roots.some((root) => under(file.path, root));
      if (error instanceof SopsError && !strict && !error.retryable) {
        withheld.push(file.path);
        continue;
      }
      if (error instanceof SopsError) throw fromSops(error);
      throw error;
    }
  }
  return { files: out, withheld };
}

export type LayeredValuesFiles = {
  /** spec.valuesFiles merged in order (under spec.values). */
  readonly spec: Values | undefined;
  /** targets[].valuesFiles merged in order, by target name (under target.values). */
  readonly targets: ReadonlyMap<string, Values>;
  /** Every path listed: values, never rendered as manifests. */
  readonly paths: ReadonlySet<string>;
};

/** Reads and parses the values files the spec lists, through `read` (one snapshot), decrypting encrypted ones. */
export async function readValuesFiles(
  context: DecryptionContext,
  spec: ConfigSyncSpec,
  ring: SopsKeyRing | undefined,
  read: (path: string) => Promise<SourceFile[]>,
): Promise<LayeredValuesFiles> {
  const normalize = (path: string): string =>
    path
      .split('/')
      .filter((part) => part !== '' && part !== '.')
      .join('/');
  const parsed = new Map<string, Values>();
  const load = async (path: string, field: string): Promise<Values> => {
    const at = normalize(path);
    const done = parsed.get(at);
    if (done !== undefined) return done;
    const files = await read(at);
    const file = files.find((f) => normalize(f.path) === at);
    if (file === undefined || files.length !== 1)
      throw new DecryptionFailure(SopsErrorCause.MalformedFile, `${field}: ${at} is not a file of the source`, false);
    const [plain] = (await decryptFiles(context, [file], ring)).files;
    const values = parseValues(Buffer.from(plain?.content ?? new Uint8Array()).toString('utf8'), at);
    parsed.set(at, values);
    return values;
  };
  const specLayers: Values[] = [];
  for (const [index, path] of (spec.valuesFiles ?? []).entries()) specLayers.push(await load(path, `spec.valuesFiles[${index}]`));
  const targets = new Map<string, Values>();
  for (const target of spec.targets) {
    if (target.valuesFiles === undefined) continue;
    const layers: Values[] = [];
    for (const [index, path] of target.valuesFiles.entries()) layers.push(await load(path, `targets[${target.name}].valuesFiles[${index}]`));
    targets.set(target.name, layerValues(layers, { keepNulls: true }));
  }
  return { spec: specLayers.length === 0 ? undefined : layerValues(specLayers, { keepNulls: true }), targets, paths: new Set(parsed.keys()) };
}
