// Which cluster the CLI and the operator talk to, chosen the way kubectl chooses it: --kubeconfig FILE, else
// every file in $KUBECONFIG (a:b, merged), else ~/.kube/config, else in-cluster (a pod's ServiceAccount);
// then --context.
//
// Our own small model of a kubeconfig instead of @kubernetes/client-node's KubeConfig: importing client-node
// costs ~80 MB of RSS (its config module loads every generated API model), and the operator needs only the
// server, TLS material and credentials (kube/connection.ts). Users with `exec` or `auth-provider` still load
// client-node, then and only then.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { isIPv6 } from 'node:net';
import { parse } from 'yaml';

/** Where a pod's ServiceAccount credentials are mounted (the token, ca.crt and namespace files). */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export type KubeconfigCluster = {
  readonly name: string;
  readonly server: string;
  /** certificate-authority: a file, absolute (resolved against the kubeconfig it is written in). */
  readonly caFile?: string | undefined;
  /** certificate-authority-data: base64 of PEM. */
  readonly caData?: string | undefined;
  readonly skipTLSVerify?: boolean | undefined;
  readonly tlsServerName?: string | undefined;
  readonly proxyUrl?: string | undefined;
};

export type KubeconfigUser = {
  readonly name: string;
  readonly token?: string | undefined;
  /** tokenFile (or client-node's token-file): read again while the process runs, since it may rotate. */
  readonly tokenFile?: string | undefined;
  readonly certFile?: string | undefined;
  readonly certData?: string | undefined;
  readonly keyFile?: string | undefined;
  readonly keyData?: string | undefined;
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  /** `exec` and `auth-provider` as written: handed to client-node, loaded only for such a user. */
  readonly exec?: unknown;
  readonly authProvider?: unknown;
};

export type KubeconfigContext = {
  readonly name: string;
  readonly cluster: string;
  readonly user: string;
  readonly namespace?: string | undefined;
};

export type KubeconfigData = {
  readonly clusters: readonly KubeconfigCluster[];
  readonly users: readonly KubeconfigUser[];
  readonly contexts: readonly KubeconfigContext[];
  readonly currentContext: string;
};

/** A loaded (possibly merged) kubeconfig. The method names are client-node's, so callers read the same. */
export class Kubeconfig implements KubeconfigData {
  readonly clusters: readonly KubeconfigCluster[];
  readonly users: readonly KubeconfigUser[];
  readonly contexts: readonly KubeconfigContext[];
  currentContext: string;

  constructor(data: KubeconfigData) {
    this.clusters = data.clusters;
    this.users = data.users;
    this.contexts = data.contexts;
    this.currentContext = data.currentContext;
  }

  getCurrentContext(): string {
    return this.currentContext;
  }

  setCurrentContext(name: string): void {
    if (this.getContextObject(name) === null) throw new Error(`context "${name}" does not exist`);
    this.currentContext = name;
  }

  getContextObject(name: string): KubeconfigContext | null {
    return this.contexts.find((c) => c.name === name) ?? null;
  }

  getCluster(name: string): KubeconfigCluster | null {
    return this.clusters.find((c) => c.name === name) ?? null;
  }

  getUser(name: string): KubeconfigUser | null {
    return this.users.find((u) => u.name === name) ?? null;
  }

  getCurrentCluster(): KubeconfigCluster | null {
    const context = this.getContextObject(this.currentContext);
    return context === null ? null : this.getCluster(context.cluster);
  }

  getCurrentUser(): KubeconfigUser | null {
    const context = this.getContextObject(this.currentContext);
    return context === null ? null : this.getUser(context.user);
  }
}

export type KubeConfigOptions = {
  /** --kubeconfig: this file only (KUBECONFIG is ignored), as in kubectl. */
  readonly kubeconfig?: string | undefined;
  /** --context: the context to use instead of the current-context. */
  readonly context?: string | undefined;
  readonly env: NodeJS.ProcessEnv;
  /** Where the ServiceAccount is mounted in a pod (tests point it elsewhere). */
  readonly serviceAccountDir?: string;
};

export function loadKubeConfig(options: KubeConfigOptions): Kubeconfig {
  let kc: Kubeconfig;
  const list = options.env['KUBECONFIG'];
  const saDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  if (options.kubeconfig !== undefined && options.kubeconfig !== '') {
    kc = readKubeconfigFile(options.kubeconfig);
  } else if (list !== undefined && list !== '') {
    kc = mergeKubeConfigFiles(list.split(delimiter));
  } else {
    const home = join(options.env['HOME'] ?? homedir(), '.kube', 'config');
    if (existsSync(home)) kc = readKubeconfigFile(home);
    else if (options.env['KUBERNETES_SERVICE_HOST'] !== undefined && existsSync(join(saDir, 'token'))) kc = inClusterKubeconfig(options.env, saDir);
    else throw new Error('no kubeconfig: set KUBECONFIG, pass --kubeconfig FILE, or create ~/.kube/config (in a pod, the ServiceAccount is used)');
  }
  if (options.context !== undefined && options.context !== '') kc.setCurrentContext(options.context);
  return kc;
}

/**
 * kubectl's merge of the files in $KUBECONFIG: files that do not exist are skipped (an empty entry too); for
 * a cluster, user or context name the first file that defines it wins; current-context comes from the first
 * file that sets one. Relative paths (certificate files) resolve against the file they are written in.
 */
export function mergeKubeConfigFiles(files: readonly string[]): Kubeconfig {
  const present = files.filter((file) => file !== '' && existsSync(file));
  if (present.length === 0) throw new Error(`none of the files in KUBECONFIG exist: ${files.join(delimiter)}`);
  return mergeKubeConfigs(present.map(readKubeconfigFile));
}

export function mergeKubeConfigs(configs: readonly KubeconfigData[]): Kubeconfig {
  const firstByName = <T extends { name: string }>(lists: readonly (readonly T[])[]): T[] => {
    const seen = new Map<string, T>();
    for (const list of lists) for (const item of list) if (!seen.has(item.name)) seen.set(item.name, item);
    return [...seen.values()];
  };
  return new Kubeconfig({
    clusters: firstByName(configs.map((c) => c.clusters)),
    users: firstByName(configs.map((c) => c.users)),
    contexts: firstByName(configs.map((c) => c.contexts)),
    currentContext: configs.map((c) => c.currentContext).find((name) => name !== '') ?? '',
  });
}

/** One kubeconfig file; relative file references resolve against its directory. */
export function readKubeconfigFile(file: string): Kubeconfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the kubeconfig ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, { cause: error });
  }
  return parseKubeconfigText(text, { file, baseDir: dirname(file) });
}

/**
 * A kubeconfig's text. Error messages name the file, the entry and the field, never a value: a YAML error's
 * own message quotes the offending line, which may hold a token, so only its position is kept.
 */
export function parseKubeconfigText(text: string, where: { file: string; baseDir: string }): Kubeconfig {
  let doc: unknown;
  try {
    doc = parse(text, { prettyErrors: false });
  } catch (error) {
    const pos = (error as { linePos?: readonly { line: number; col: number }[] }).linePos?.[0];
    throw new Error(`the kubeconfig ${where.file} is not valid YAML${pos === undefined ? '' : ` (line ${pos.line}, column ${pos.col})`}`);
  }
  if (doc === null || doc === undefined) doc = {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`the kubeconfig ${where.file} is not a mapping`);
  const root = doc as Record<string, unknown>;
  const fail = (what: string): never => {
    throw new Error(`the kubeconfig ${where.file}: ${what}`);
  };
  const path = (value: unknown, field: string): string | undefined => {
    const s = optionalString(value, field, fail);
    return s === undefined || s === '' ? undefined : isAbsolute(s) ? s : join(where.baseDir, s);
  };
  const entries = (key: string, inner: string): { name: string; body: Record<string, unknown>; at: string }[] => {
    const list = root[key];
    if (list === undefined || list === null) return [];
    if (!Array.isArray(list)) return fail(`${key} is not a list`);
    return list.map((item: unknown, i) => {
      const at = `${key}[${i}]`;
      if (item === null || typeof item !== 'object') return fail(`${at} is not a mapping`);
      const { name, [inner]: body } = item as Record<string, unknown>;
      if (typeof name !== 'string' || name === '') return fail(`${at}.name is missing`);
      if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) return fail(`${at}.${inner} is not a mapping`);
      return { name, body: (body ?? {}) as Record<string, unknown>, at: `${at} (${name})` };
    });
  };

  const clusters = entries('clusters', 'cluster').map(({ name, body, at }): KubeconfigCluster => {
    const server = optionalString(body['server'], `${at}.cluster.server`, fail);
    if (server === undefined || server === '') return fail(`${at}.cluster.server is missing`);
    return {
      name,
      server: server.replace(/\/+$/, ''),
      caFile: path(body['certificate-authority'], `${at}.cluster.certificate-authority`),
      caData: optionalString(body['certificate-authority-data'], `${at}.cluster.certificate-authority-data`, fail),
      skipTLSVerify: body['insecure-skip-tls-verify'] === true,
      tlsServerName: optionalString(body['tls-server-name'], `${at}.cluster.tls-server-name`, fail),
      proxyUrl: optionalString(body['proxy-url'], `${at}.cluster.proxy-url`, fail),
    };
  });
  const users = entries('users', 'user').map(({ name, body, at }): KubeconfigUser => ({
    name,
    token: optionalString(body['token'], `${at}.user.token`, fail),
    tokenFile: path(body['tokenFile'] ?? body['token-file'], `${at}.user.tokenFile`),
    certFile: path(body['client-certificate'], `${at}.user.client-certificate`),
    certData: optionalString(body['client-certificate-data'], `${at}.user.client-certificate-data`, fail),
    keyFile: path(body['client-key'], `${at}.user.client-key`),
    keyData: optionalString(body['client-key-data'], `${at}.user.client-key-data`, fail),
    username: optionalString(body['username'], `${at}.user.username`, fail),
    password: optionalString(body['password'], `${at}.user.password`, fail),
    exec: body['exec'] ?? undefined,
    authProvider: body['auth-provider'] ?? undefined,
  }));
  const contexts = entries('contexts', 'context').map(({ name, body, at }): KubeconfigContext => ({
    name,
    cluster: optionalString(body['cluster'], `${at}.context.cluster`, fail) ?? '',
    user: optionalString(body['user'], `${at}.context.user`, fail) ?? '',
    namespace: optionalString(body['namespace'], `${at}.context.namespace`, fail),
  }));
  return new Kubeconfig({ clusters, users, contexts, currentContext: optionalString(root['current-context'], 'current-context', fail) ?? '' });
}

/** The field's name only in the error: the value may be a credential. */
function optionalString(value: unknown, field: string, fail: (what: string) => never): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return fail(`${field} is not a string`);
  return value;
}

/**
 * A pod's own ServiceAccount, as client-go's rest.InClusterConfig: the API server from KUBERNETES_SERVICE_HOST
 * and _PORT (an IPv6 address in brackets), the mounted CA, and the mounted token, which the kubelet rotates
 * (read again while running). The context's namespace is the pod's.
 */
export function inClusterKubeconfig(env: NodeJS.ProcessEnv, saDir: string = SERVICE_ACCOUNT_DIR): Kubeconfig {
  const host = env['KUBERNETES_SERVICE_HOST'];
  const port = env['KUBERNETES_SERVICE_PORT'];
  if (host === undefined || host === '' || port === undefined || port === '')
    throw new Error('in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set');
  const namespaceFile = join(saDir, 'namespace');
  const namespace = existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() : undefined;
  const name = 'in-cluster';
  return new Kubeconfig({
    clusters: [{ name, server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`, caFile: join(saDir, 'ca.crt') }],
    users: [{ name, tokenFile: join(saDir, 'token') }],
    contexts: [{ name, cluster: name, user: name, ...(namespace === undefined || namespace === '' ? {} : { namespace }) }],
    currentContext: name,
  });
}
