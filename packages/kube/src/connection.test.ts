import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectKubeconfig } from './connection.ts';
import { Kubeconfig, type KubeconfigCluster, type KubeconfigUser } from './kubeconfig.ts';
import { createKubeRest } from './rest.ts';

const single = (cluster: Omit<KubeconfigCluster, 'name'>, user: Omit<KubeconfigUser, 'name'>): Kubeconfig =>
  new Kubeconfig({
    clusters: [{ name: 'c', ...cluster }],
    users: [{ name: 'u', ...user }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });

describe('connectKubeconfig', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncline-connection-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('sends a static token as a bearer header; TLS from the data fields, skip-verify and tls-server-name', async () => {
    const connection = await connectKubeconfig(
      single(
        { server: 'https://api.example:6443', caData: Buffer.from('CA PEM').toString('base64'), skipTLSVerify: true, tlsServerName: 'kubernetes' },
        { token: 'tok-1', certData: Buffer.from('CERT PEM').toString('base64'), keyData: Buffer.from('KEY PEM').toString('base64') },
      ),
    );
    expect(connection.server).toBe('https://api.example:6443');
    expect(await connection.authHeaders()).toEqual({ Authorization: 'Bearer tok-1' });
    expect(String(connection.tls.ca)).toBe('CA PEM');
    expect(String(connection.tls.cert)).toBe('CERT PEM');
    expect(String(connection.tls.key)).toBe('KEY PEM');
    expect(connection.tls.rejectUnauthorized).toBe(false);
    expect(connection.tls.servername).toBe('kubernetes');
    expect(connection.basicAuth).toBeUndefined();
  });

  it('reads certificate files, and reads a token file again once a minute (it rotates)', async () => {
    const ca = join(dir, 'ca.crt');
    const token = join(dir, 'token');
    await writeFile(ca, 'CA FROM FILE');
    await writeFile(token, 'first\n');
    let now = 1_000_000;
    const connection = await connectKubeconfig(single({ server: 'https://api.example', caFile: ca }, { tokenFile: token }), { now: () => now });
    expect(String(connection.tls.ca)).toBe('CA FROM FILE');
    expect(connection.tls.rejectUnauthorized).toBeUndefined();
    expect(await connection.authHeaders()).toEqual({ Authorization: 'Bearer first' });
    await writeFile(token, 'second\n');
    now += 30_000;
    expect(await connection.authHeaders()).toEqual({ Authorization: 'Bearer first' });
    now += 31_000;
    expect(await connection.authHeaders()).toEqual({ Authorization: 'Bearer second' });
    // a token file that is briefly gone keeps the last token
    await rm(token);
    now += 61_000;
    expect(await connection.authHeaders()).toEqual({ Authorization: 'Bearer second' });
  });

  it('uses basic auth for username/password, and nothing for a context without a user', async () => {
    const basic = await connectKubeconfig(single({ server: 'https://api.example' }, { username: 'admin', password: 'pw' }));
    expect(basic.basicAuth).toBe('admin:pw');
    expect(await basic.authHeaders()).toEqual({});
    const anonymous = await connectKubeconfig(
      new Kubeconfig({
        clusters: [{ name: 'c', server: 'http://127.0.0.1:8080' }],
        users: [],
        contexts: [{ name: 'x', cluster: 'c', user: '' }],
        currentContext: 'x',
      }),
    );
    expect(await anonymous.authHeaders()).toEqual({});
  });

  it('says what is missing, naming files and entries but no credential', async () => {
    const kc = (data: Partial<ConstructorParameters<typeof Kubeconfig>[0]>): Kubeconfig =>
      new Kubeconfig({ clusters: [], users: [], contexts: [], currentContext: '', ...data });
    await expect(connectKubeconfig(kc({}))).rejects.toThrow('the kubeconfig has no current-context (pass --context)');
    await expect(connectKubeconfig(kc({ currentContext: 'x' }))).rejects.toThrow('context "x" does not exist');
    await expect(connectKubeconfig(kc({ contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' }))).rejects.toThrow(
      'context "x" names cluster "c", which the kubeconfig does not define',
    );
    await expect(
      connectKubeconfig(kc({ clusters: [{ name: 'c', server: 'https://a' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' })),
    ).rejects.toThrow('context "x" names user "u", which the kubeconfig does not define');
    const missing = join(dir, 'missing.key');
    const error = await connectKubeconfig(
      single({ server: 'https://a' }, { token: 'hush-hush', certData: Buffer.from('C').toString('base64'), keyFile: missing }),
    ).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(`cannot read the user "u": client-key file ${missing}: ENOENT`);
    await expect(connectKubeconfig(single({ server: 'https://a', proxyUrl: 'socks5://127.0.0.1:1080' }, {}))).rejects.toThrow(
      'cluster "c": proxy-url socks5:// is not supported (only http:// and https:// proxies)',
    );
  });

  it('runs an exec credential plugin through client-node, loaded only for such a user', async () => {
    const credential = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'from-exec' } });
    const connection = await connectKubeconfig(
      single(
        { server: 'https://api.example' },
        {
          exec: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: ['-e', `process.stdout.write(${JSON.stringify(credential)})`],
            interactiveMode: 'Never',
          },
        },
      ),
    );
    expect(await connection.authHeaders()).toEqual({ Authorization: 'Bearer from-exec' });
  });

  it('tunnels https requests through an http proxy-url (CONNECT to the API server)', async () => {
    const seen: string[] = [];
    const proxy: Server = createServer((socket) => {
      socket.once('data', (chunk: Buffer) => {
        seen.push(chunk.toString('latin1').split('\r\n')[0] ?? '');
        socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const address = proxy.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      const connection = await connectKubeconfig(single({ server: 'https://api.cluster.invalid:6443', proxyUrl: `http://127.0.0.1:${port}` }, { token: 't' }));
      const rest = await createKubeRest(connection);
      await expect(rest.request({ method: 'GET', path: '/version' })).rejects.toThrow();
      expect(seen).toEqual(['CONNECT api.cluster.invalid:6443 HTTP/1.1']);
    } finally {
      proxy.close();
    }
  });
});
