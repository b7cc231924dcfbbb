// A private certificate authority for tests, made with the openssl CLI (node:crypto makes keys, not X.509
// certificates): a CA, and a server certificate it signed for 127.0.0.1 and localhost.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export type TestCa = {
  /** The CA's certificate (PEM): what a client must trust. */
  readonly caCert: string;
  /** The server's key and certificate (PEM), signed by the CA, valid for 127.0.0.1 and localhost. */
  readonly server: { readonly key: string; readonly cert: string };
};

export async function createTestCa(): Promise<TestCa> {
  const dir = await mkdtemp(join(tmpdir(), 'syncline-ca-'));
  const at = (name: string): string => join(dir, name);
  try {
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      at('ca.key'),
      '-out',
      at('ca.crt'),
      '-days',
      '2',
      '-subj',
      '/CN=Syncline Test CA',
    ]);
    await run('openssl', [
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      at('server.key'),
      '-out',
      at('server.csr'),
      '-subj',
      '/CN=127.0.0.1',
    ]);
    await writeFile(
      at('ext.cnf'),
      'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n',
    );
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      at('server.csr'),
      '-CA',
      at('ca.crt'),
      '-CAkey',
      at('ca.key'),
      '-CAcreateserial',
      '-out',
      at('server.crt'),
      '-days',
      '2',
      '-extfile',
      at('ext.cnf'),
    ]);
    return {
      caCert: await readFile(at('ca.crt'), 'utf8'),
      server: { key: await readFile(at('server.key'), 'utf8'), cert: await readFile(at('server.crt'), 'utf8') },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
