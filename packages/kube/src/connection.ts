// From a kubeconfig's current context to what the HTTP clients need (server, TLS material, credential
// headers): a KubeConnection. Tokens in files (a pod's ServiceAccount token, which the kubelet rotates) are
// read again once a minute, as client-go does. `exec` and `auth-provider` users are client-node's business:
// it is imported for them only, so an operator with a token, a certificate or a ServiceAccount never pays
// for it (~80 MB of RSS).
import { connectionFromKubeConfig, type KubeConnection } from './transport.ts';
import { readFileSync } from 'node:fs';
import type { Kubeconfig, KubeconfigCluster, KubeconfigUser } from './kubeconfig.ts';

/** client-go's cachingTokenSource period for a token file. */
const TOKEN_FILE_REFRESH_MS = 60_000;

/** A file the kubeconfig names, read; the error names the field and path, never the content. */
function readReferenced(file: string, field: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new Error(`cannot read the ${field} file ${file}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  }
}

function fromData(data: string, field: string): Buffer {
  const decoded = Buffer.from(data, 'base64');
  if (decoded.length === 0) throw new Error(`${field} is not base64`);
  return decoded;
}

function pem(data: string | undefined, file: string | undefined, field: string): Buffer | undefined {
  if (data !== undefined && data !== '') return fromData(data, `${field}-data`);
  if (file !== undefined) return readReferenced(file, field);
  return undefined;
}

function readToken(file: string): string {
  return readReferenced(file, 'tokenFile').toString('utf8').trim();
}

/** kubectl's proxy-url for http(s) proxies (Node's agent does the CONNECT); socks5 is not supported. */
function proxyOf(cluster: KubeconfigCluster): string | undefined {
  if (cluster.proxyUrl === undefined || cluster.proxyUrl === '') return undefined;
  let url: URL;
  try {
    url = new URL(cluster.proxyUrl);
  } catch {
    throw new Error(`cluster "${cluster.name}": proxy-url is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`cluster "${cluster.name}": proxy-url ${url.protocol}// is not supported (only http:// and https:// proxies)`);
  if (!cluster.server.startsWith('https:')) throw new Error(`cluster "${cluster.name}": proxy-url works only with an https:// server`);
  return cluster.proxyUrl;
}

/** The connection of the kubeconfig's current context. `now` is for tests (the token file's refresh period). */
export async function connectKubeconfig(kc: Kubeconfig, options: { now?: () => number } = {}): Promise<KubeConnection> {
  const now = options.now ?? Date.now;
  const contextName = kc.getCurrentContext();
  if (contextName === '') throw new Error('the kubeconfig has no current-context (pass --context)');
  const context = kc.getContextObject(contextName);
  if (context === null) throw new Error(`context "${contextName}" does not exist`);
  const cluster = kc.getCluster(context.cluster);
  if (cluster === null) throw new Error(`context "${contextName}" names cluster "${context.cluster}", which the kubeconfig does not define`);
  // A context without a user talks anonymously, as kubectl does.
  const named = context.user === '' ? { name: '' } : kc.getUser(context.user);
  if (named === null) throw new Error(`context "${contextName}" names user "${context.user}", which the kubeconfig does not define`);
  const user: KubeconfigUser = named;
  if (user.exec !== undefined || user.authProvider !== undefined) return connectWithClientNode(cluster, user);

  const proxyUrl = proxyOf(cluster);
  const tls = {
    ca: pem(cluster.caData, cluster.caFile, `cluster "${cluster.name}": certificate-authority`),
    cert: pem(user.certData, user.certFile, `user "${user.name}": client-certificate`),
    key: pem(user.keyData, user.keyFile, `user "${user.name}": client-key`),
    ...(cluster.skipTLSVerify === true ? { rejectUnauthorized: false } : {}),
    ...(cluster.tlsServerName === undefined || cluster.tlsServerName === '' ? {} : { servername: cluster.tlsServerName }),
  };
  const basicAuth = user.username !== undefined && user.username !== '' ? `${user.username}:${user.password ?? ''}` : undefined;
  const base = { server: cluster.server, tls, basicAuth, ...(proxyUrl === undefined ? {} : { proxyUrl }) };

  if (user.token !== undefined && user.token !== '') {
    const headers = Object.freeze({ Authorization: `Bearer ${user.token}` });
    return { ...base, authHeaders: () => Promise.resolve(headers) };
  }
  if (user.tokenFile !== undefined) {
    const file = user.tokenFile;
    let headers = Object.freeze({ Authorization: `Bearer ${readToken(file)}` });
    let readAt = now();
    return {
      ...base,
      authHeaders() {
        if (now() - readAt > TOKEN_FILE_REFRESH_MS) {
          // A rotation in progress (or a briefly missing file) keeps the last token: the API server decides.
          try {
            headers = Object.freeze({ Authorization: `Bearer ${readToken(file)}` });
          } catch {
            // keep the previous token
          }
          readAt = now();
        }
        return Promise.resolve(headers);
      },
    };
  }
  const none = Object.freeze({});
  return { ...base, authHeaders: () => Promise.resolve(none) };
}

/** exec plugins and auth-providers: client-node runs them, loaded now and only for such a user. */
async function connectWithClientNode(cluster: KubeconfigCluster, user: KubeconfigUser): Promise<KubeConnection> {
  if (proxyOf(cluster) !== undefined) throw new Error(`cluster "${cluster.name}": proxy-url is not supported together with an exec or auth-provider user`);
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: cluster.name,
        server: cluster.server,
        skipTLSVerify: cluster.skipTLSVerify === true,
        caData: cluster.caData,
        caFile: cluster.caFile,
        tlsServerName: cluster.tlsServerName,
      },
    ],
    users: [
      {
        name: user.name,
        exec: user.exec,
        authProvider: user.authProvider,
        certData: user.certData,
        certFile: user.certFile,
        keyData: user.keyData,
        keyFile: user.keyFile,
        token: user.token,
        username: user.username,
        password: user.password,
      },
    ],
    contexts: [{ name: 'current', cluster: cluster.name, user: user.name }],
    currentContext: 'current',
  });
  return connectionFromKubeConfig(kc);
}
