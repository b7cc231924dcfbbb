// End to end: SOPS-encrypted files written by the real sops CLI, committed to the real Git server, decrypted by
// the real operator in memory and applied to the real control plane. Plaintext reaches the cluster only as the
// Secret it belongs in; status, conditions and Events name files and recipients, never values.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  ensureSops,
  generateAgeKey,
  startGitServer,
  startOperator,
  startVaultTransit,
  type GitServer,
  type OperatorProcess,
  type SopsCli,
  type TestRepo,
} from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigSync, condition, configMapData, configSync, core, eventually, installCrds, readConfigSync, waitForReady } from './harness.ts';
import type { ConfigSync } from '@syncline/operator';

const PASSWORD = 'pw-7f3a9c-never-in-status';
const GREETING = 'greeting-from-encrypted-values';

describe('SOPS decryption end to end', () => {
  let sops: SopsCli;
  let git: GitServer;
  let repo: TestRepo;
  let ns: TestNamespace;
  let operator: OperatorProcess;
  const keys: { identity: string; recipient: string }[] = [];

  const encrypt = (name: string, plaintext: string, ...recipients: number[]): Buffer =>
    sops.encrypt({
      name: name.split('/').pop() ?? name,
      plaintext,
      args: ['--age', recipients.map((i) => keys[i]?.recipient ?? '').join(','), '--encrypted-regex', '^(data|stringData|greeting)$'],
    });
  const secretYaml = (name: string, password: string): string =>
    `apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${name}\ntype: Opaque\nstringData:\n  password: ${password}\n`;
  const setKeys = async (...indices: number[]): Promise<void> => {
    const body = {
      metadata: { name: 'sops-keys' },
      stringData: { 'identity.agekey': `# rotated by the test\n${indices.map((i) => keys[i]?.identity).join('\n')}\n` },
    };
    try {
      await core.replaceNamespacedSecret({ name: 'sops-keys', namespace: ns.name, body });
    } catch {
      await core.createNamespacedSecret({ namespace: ns.name, body });
    }
  };
  const secretValue = async (name: string): Promise<string | undefined> => {
    try {
      const secret = await core.readNamespacedSecret({ name, namespace: ns.name });
      const value = secret.data?.['password'];
      return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
    } catch (error) {
      if ((error as { code?: number }).code === 404) return undefined;
      throw error;
    }
  };
  const failedWith = async (name: string, text: string): Promise<ConfigSync> =>
    eventually(
      async () => {
        const cs = await readConfigSync(ns.name, name);
        const ready = condition(cs, 'Ready');
        return ready?.status === 'False' && ready.reason === 'DecryptionFailed' && ready.message.includes(text) ? cs : undefined;
      },
      `${name} to fail with DecryptionFailed: ${text}`,
      60_000,
    );
  const eventsOf = async (name: string): Promise<string> =>
    JSON.stringify(
      (await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: `involvedObject.name=${name}` })).items.map((e) => [e.reason, e.message]),
    );

  beforeAll(async () => {
    sops = await ensureSops((line) => console.log(line));
    keys.push(await generateAgeKey(), await generateAgeKey());
    await installCrds();
    git = await startGitServer();
    repo = await git.createRepo('secrets');
    ns = await testNamespace({ prefix: 'sops' });
    operator = await startOperator({ kubeconfig: testKubeconfigPath(), args: ['--namespace', ns.name] });
  }, 20 * 60_000);
  afterAll(async () => {
    await operator?.stop();
    await ns?.[Symbol.asyncDispose]();
    await git?.close();
  });

  it('applies an encrypted Secret and encrypted values, refuses a tampered file without applying or pruning, and needs decryption configured', async () => {
    // given an encrypted Secret, a template fed by an encrypted values file, and the key Secret
    const first = await repo.commit({
      'app/db.yaml': encrypt('db.yaml', secretYaml('db', PASSWORD), 0),
      'app/settings.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  greeting: "{{ values.greeting }}{{ values.suffix }}"\n',
      'values.sops.yaml': encrypt('values.sops.yaml', `greeting: ${GREETING}\nsuffix: -shared\n`, 0),
      'env/dev.yaml': 'suffix: -dev\n',
    });
    await setKeys(0);
    await applyConfigSync(
      configSync(ns.name, 'app', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1s',
        valuesFiles: ['values.sops.yaml'],
        decryption: { provider: 'sops', secretRef: { name: 'sops-keys' } },
        targets: [{ name: 'dev', namespace: ns.name, valuesFiles: ['env/dev.yaml'] }],
      }),
    );

    // then the Secret holds the plaintext and the template saw the decrypted value (the target's values file over it)
    const cs = await waitForReady(ns.name, 'app', (c) => c.status?.sourceRevision === first, 60_000);
    expect(await secretValue('db')).toBe(PASSWORD);
    expect(await configMapData(ns.name, 'settings')).toEqual({ greeting: `${GREETING}-dev` });
    // and no plaintext is in the status or Events
    expect(JSON.stringify(cs.status)).not.toContain(PASSWORD);
    expect(await eventsOf('app')).not.toContain(PASSWORD);

    // when the committed ciphertext is tampered with and the template removed
    const db = encrypt('db.yaml', secretYaml('db', 'changed-pw'), 0).toString();
    const tampered = db.replace(/(password: ENC\[AES256_GCM,data:)(.)/, (_all, head: string, c: string) => `${head}${c === 'A' ? 'B' : 'A'}`);
    const bad = await repo.commit({ 'app/db.yaml': tampered, 'app/settings.yaml.hbs': null });
    // then the sync stalls naming the file, applies nothing and prunes nothing
    const failed = await failedWith('app', 'MAC mismatch');
    expect(condition(failed, 'Ready')?.message).toContain('app/db.yaml');
    expect(failed.status?.lastAttemptedRevision).toBe(bad);
    expect(await secretValue('db')).toBe(PASSWORD);
    expect(await configMapData(ns.name, 'settings')).toEqual({ greeting: `${GREETING}-dev` });
    expect(JSON.stringify(failed.status)).not.toContain('changed-pw');

    // when the file is fixed, then it syncs again (and the removed template is pruned now)
    const fixed = await repo.commit({ 'app/db.yaml': db });
    await waitForReady(ns.name, 'app', (c) => c.status?.sourceRevision === fixed, 60_000);
    expect(await secretValue('db')).toBe('changed-pw');
    await eventually(async () => ((await configMapData(ns.name, 'settings')) === undefined ? true : undefined), 'the prune');

    // given a sync without spec.decryption that meets an encrypted file
    await repo.commit({ 'other/token.yaml': encrypt('token.yaml', secretYaml('token', 'other-pw'), 0) });
    await applyConfigSync(
      configSync(ns.name, 'nodec', {
        source: { git: { repo: repo.url, revision: 'main', path: 'other' } },
        refreshInterval: '1s',
        targets: [{ name: 'dev', namespace: ns.name }],
      }),
    );
    // then it stalls naming the file and its recipient, and applies no ciphertext
    const nodec = await failedWith('nodec', 'other/token.yaml');
    expect(condition(nodec, 'Ready')?.message).toContain('no spec.decryption');
    expect(condition(nodec, 'Ready')?.message).toContain(keys[0]?.recipient);
    expect(condition(nodec, 'Stalled')?.status).toBe('True');
    expect(await secretValue('token')).toBeUndefined();
  });

  it('rotates keys without downtime: a key Secret change reconciles at once (watch), either key opens a re-encrypted file', async () => {
    // given a sync with a long refresh interval, so only the key Secret's watch can wake it, and a file for key 1 only
    await setKeys(0);
    const forSecondKey = await repo.commit({ 'rotate/api.yaml': encrypt('api.yaml', secretYaml('api', 'rotated-pw'), 1) });
    await applyConfigSync(
      configSync(ns.name, 'rotate', {
        source: { git: { repo: repo.url, revision: 'main', path: 'rotate' } },
        refreshInterval: '1h',
        decryption: { provider: 'sops', secretRef: { name: 'sops-keys' } },
        targets: [{ name: 'dev', namespace: ns.name }],
      }),
    );
    // then it says which recipient the file needs, never the key material
    const failed = await failedWith('rotate', keys[1]?.recipient ?? '');
    expect(condition(failed, 'Ready')?.message).toContain('no key in Secret');
    expect(JSON.stringify(failed.status)).not.toContain('AGE-SECRET-KEY');
    expect(await secretValue('api')).toBeUndefined();

    // when the new key is added to the Secret, then the sync runs at once
    await setKeys(0, 1);
    await waitForReady(ns.name, 'rotate', (c) => c.status?.sourceRevision === forSecondKey, 60_000);
    expect(await secretValue('api')).toBe('rotated-pw');

    // when the file is re-encrypted for both keys and the old key leaves the Secret, then it keeps syncing
    const both = await repo.commit({ 'rotate/api.yaml': encrypt('api.yaml', secretYaml('api', 'both-keys-pw'), 0, 1) });
    await applyConfigSync(
      configSync(ns.name, 'rotate', {
        source: { git: { repo: repo.url, revision: 'main', path: 'rotate' } },
        refreshInterval: '1s',
        decryption: { provider: 'sops', secretRef: { name: 'sops-keys' } },
        targets: [{ name: 'dev', namespace: ns.name }],
      }),
    );
    await waitForReady(ns.name, 'rotate', (c) => c.status?.sourceRevision === both, 60_000);
    await setKeys(1);
    await eventually(async () => ((await secretValue('api')) === 'both-keys-pw' ? true : undefined), 'the re-encrypted value');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const cs = await readConfigSync(ns.name, 'rotate');
    expect(condition(cs, 'Ready')?.status).toBe('True');
  });
  it('stalls on a missing or bad key Secret, naming it and the bad entry, and recovers when it is fixed', async () => {
    // given a sync whose key Secret does not exist yet
    const revision = await repo.commit({ 'keys/cfg.yaml': encrypt('cfg.yaml', secretYaml('cfg', 'cfg-pw'), 0) });
    await applyConfigSync(
      configSync(ns.name, 'keys', {
        source: { git: { repo: repo.url, revision: 'main', path: 'keys' } },
        refreshInterval: '1h',
        decryption: { provider: 'sops', secretRef: { name: 'team-keys' } },
        targets: [{ name: 'dev', namespace: ns.name }],
      }),
    );
    await failedWith('keys', `the Secret ${ns.name}/team-keys named in spec.decryption.secretRef does not exist`);
    // when it is created with a line that is not an age identity, then that line is named, never its text
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 'team-keys' }, stringData: { 'team.agekey': `${keys[0]?.identity}\nnot-an-identity-secret-text\n` } },
    });
    const bad = await failedWith('keys', 'key team.agekey line 2 is not an age identity');
    expect(JSON.stringify(bad.status)).not.toContain('not-an-identity-secret-text');
    expect(JSON.stringify(bad.status)).not.toContain(keys[0]?.identity);
    // when it is fixed, then the watch wakes the sync (refreshInterval 1h) and it applies
    await core.replaceNamespacedSecret({
      name: 'team-keys',
      namespace: ns.name,
      body: { metadata: { name: 'team-keys' }, stringData: { 'team.agekey': `${keys[0]?.identity}\n` } },
    });
    await waitForReady(ns.name, 'keys', (c) => c.status?.sourceRevision === revision, 60_000);
    expect(await secretValue('cfg')).toBe('cfg-pw');
  });

  it(
    'decrypts a file sops wrapped with Vault transit, and retries with backoff while Vault is unreachable',
    async () => {
      // given a Vault-compatible server reached through a loopback forwarder (its own process: sops runs synchronously
      // from this one) that the test can take down and bring back on the same port
      const vault = await startVaultTransit({ onProgress: (line) => console.log(line) });
      await vault.createKey('transit', 'app');
      const upstream = new URL(vault.address);
      const script = `const net = require('node:net');
      const server = net.createServer((c) => { const t = net.connect(${upstream.port}, '127.0.0.1'); c.pipe(t).pipe(c); c.on('error', () => t.destroy()); t.on('error', () => c.destroy()); });
      server.listen(Number(process.argv[1]), '127.0.0.1', () => console.log(String(server.address().port)));`;
      const forward = (port: number): Promise<{ child: ChildProcess; port: number }> =>
        new Promise((resolve, reject) => {
          const child = spawn(process.execPath, ['-e', script, String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
          child.stdout?.once('data', (chunk: Buffer) => resolve({ child, port: Number(chunk.toString().trim()) }));
          child.once('exit', (code) => reject(new Error(`the forwarder exited (${code})`)));
        });
      const close = async (forwarder: { child: ChildProcess }): Promise<void> => {
        if (forwarder.child.exitCode !== null || forwarder.child.signalCode !== null) return;
        const exited = new Promise((resolve) => forwarder.child.once('exit', resolve));
        forwarder.child.kill();
        await exited;
      };
      let forwarder = await forward(0);
      const port = forwarder.port;
      try {
        const address = `http://127.0.0.1:${port}`;
        const encrypted = sops.encrypt({
          name: 'vault.yaml',
          plaintext: secretYaml('vaulted', 'vault-pw-b81e'),
          args: ['--hc-vault-transit', `${address}/v1/transit/keys/app`],
          env: { VAULT_TOKEN: vault.token },
        });
        const revision = await repo.commit({ 'vault/vault.yaml': encrypted });
        await core.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name: 'vault-keys' }, stringData: { 'sops.vault-token': vault.token } } });
        // when Vault cannot be reached
        await close(forwarder);
        await applyConfigSync(
          configSync(ns.name, 'vault', {
            source: { git: { repo: repo.url, revision: 'main', path: 'vault' } },
            refreshInterval: '1h',
            decryption: { provider: 'sops', secretRef: { name: 'vault-keys' } },
            targets: [{ name: 'dev', namespace: ns.name }],
          }),
        );
        // then the sync fails naming the provider and the cause, not the token, and is not stalled (it retries)
        const failed = await failedWith('vault', `Vault ${address} transit/keys/app: unreachable`);
        expect(condition(failed, 'Stalled')?.status).not.toBe('True');
        expect(JSON.stringify(failed.status)).not.toContain(vault.token);
        expect(await eventsOf('vault')).not.toContain(vault.token);
        expect(await secretValue('vaulted')).toBeUndefined();
        // when Vault is back, then a retry (refreshInterval is 1h: only the backoff can wake it) applies the Secret
        forwarder = await forward(port);
        await waitForReady(ns.name, 'vault', (c) => c.status?.sourceRevision === revision, 180_000);
        expect(await secretValue('vaulted')).toBe('vault-pw-b81e');
      } finally {
        await close(forwarder).catch(() => undefined);
        await vault.stop();
      }
    },
    6 * 60_000,
  );
});
