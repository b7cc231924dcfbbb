// The web UI's Mirrors page in a real browser (and --ui-anonymous, which this operator runs with): label-driven mirroring's copies as the operator's mirroring
// controller sees them (synced, conflict with a foreign object), shown to a viewer only where their RBAC lets
// them list that kind at both ends, and never a value. A mirror prefix unique to this file keeps other test
// files' objects out of this operator's view.
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { ensureChromium, startOperator, type OperatorProcess } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { core, installCrds, kc } from './harness.ts';

const PREFIX = `uimirror-${randomBytes(2).toString('hex')}.test`;
const SECRET_VALUE = 'hunter2-mirrored';
const SLOW = 90_000;
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
const root = join(import.meta.dirname, '..', '..');

describe('web UI: the label-driven mirroring map', () => {
  let home: TestNamespace;
  let src: TestNamespace;
  let a: TestNamespace;
  let b: TestNamespace;
  let operator: OperatorProcess;
  let browser: Browser;
  let url: string;
  const tokens = { wide: '', narrow: '' };

  beforeAll(async () => {
    const executablePath = ensureChromium();
    execFileSync(process.execPath, [join(root, 'packages', 'ui', 'src', 'build.ts')], { stdio: 'inherit' });
    await installCrds();
    home = await testNamespace({ prefix: 'uim-home' });
    src = await testNamespace({ prefix: 'uim-src' });
    a = await testNamespace({ prefix: 'uim-a' });
    b = await testNamespace({ prefix: 'uim-b' });
    // given a foreign Secret holding the name in b, and a source in src that targets a and b
    await core.createNamespacedSecret({ namespace: b.name, body: { metadata: { name: 'db' }, stringData: { note: 'not yours' } } });
    await core.createNamespacedSecret({
      namespace: src.name,
      body: {
        metadata: { name: 'db', labels: { [`${PREFIX}/sync-source`]: 'true' }, annotations: { [`${PREFIX}/targets`]: `${a.name},${b.name}` } },
        stringData: { password: SECRET_VALUE },
      },
    });
    // wide may list Secrets in src, a and b; narrow in src and a only
    for (const [who, namespaces] of [
      ['wide', [src, a, b]],
      ['narrow', [src, a]],
    ] as const) {
      await core.createNamespacedServiceAccount({ namespace: home.name, body: { metadata: { name: who } } });
      for (const ns of namespaces) {
        await rbac.createNamespacedRole({
          namespace: ns.name,
          body: { metadata: { name: `list-secrets-${who}` }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }] },
        });
        await rbac.createNamespacedRoleBinding({
          namespace: ns.name,
          body: {
            metadata: { name: `list-secrets-${who}` },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `list-secrets-${who}` },
            subjects: [{ kind: 'ServiceAccount', name: who, namespace: home.name }],
          },
        });
      }
      tokens[who] =
        (await core.createNamespacedServiceAccountToken({ name: who, namespace: home.name, body: { spec: { expirationSeconds: 3600 } } })).status?.token ?? '';
    }
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      // The source's namespace is trusted (its replicas need no consent from the namespaces they target).
      args: [
        '--namespace',
        home.name,
        '--mirror-prefix',
        PREFIX,
        '--mirror-source-namespaces',
        src.name,
        '--trusted-namespaces',
        src.name,
        '--mirror-resync',
        '3s',
        '--webhook-addr',
        'off',
        '--ui-addr',
        '127.0.0.1:0',
        '--ui-anonymous',
      ],
    });
    url = `http://${operator.uiAddress ?? ''}`;
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await operator?.stop();
    for (const ns of [home, src, a, b]) await ns?.[Symbol.asyncDispose]();
  });

  async function signIn(who: 'wide' | 'narrow'): Promise<Page> {
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(SLOW);
    await page.goto(`${url}/login`);
    await page.fill('#token', tokens[who]);
    await page.click('button[type=submit]');
    await page.waitForURL(`${url}/`);
    return page;
  }

  it('maps each copy (synced; a conflict with the foreign object), where the viewer may list Secrets at both ends, without values', async () => {
    // when the wide viewer opens Mirrors, then the copy in a is synced and the one in b a conflict
    const page = await signIn('wide');
    await page.click('nav a:has-text("Mirrors")');
    await page.waitForURL(`${url}/mirrors`);
    const row = (namespace: string) => page.locator(`tr[data-mirror="Secret/${src.name}/db/${namespace}"]`);
    await row(a.name).filter({ hasText: 'synced' }).waitFor({ timeout: SLOW });
    await row(b.name).filter({ hasText: 'conflict' }).waitFor({ timeout: SLOW });
    expect(await row(b.name).getAttribute('class')).toContain('bad');
    // (with whom: the message says what holds the name)
    expect(await row(b.name).textContent()).toMatch(/exists and is not a replica|held by|targets it too/);
    // and no value reached the page
    const content = await page.content();
    expect(content).not.toContain(SECRET_VALUE);
    expect(content).not.toContain(Buffer.from(SECRET_VALUE).toString('base64'));

    // when the narrow viewer opens it, then the copy in b (where they may not list Secrets) is not there
    const narrow = await signIn('narrow');
    await narrow.goto(`${url}/mirrors`);
    await narrow.locator(`tr[data-mirror="Secret/${src.name}/db/${a.name}"]`).waitFor({ timeout: SLOW });
    expect(await narrow.locator(`tr[data-mirror="Secret/${src.name}/db/${b.name}"]`).count()).toBe(0);
  }, 240_000);

  it('with --ui-anonymous, lets a viewer in without a sign-in as system:anonymous, who sees what RBAC grants that user: nothing here', async () => {
    // given a browser that never signed in, when it opens the overview, then it is not sent to the sign-in page
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(SLOW);
    await page.goto(`${url}/`);
    await page.waitForSelector('.banner');
    expect(page.url()).toBe(`${url}/`);
    expect(await page.textContent('.user span')).toBe('system:anonymous');
    // and it sees no object and no copy (system:anonymous may list nothing)
    expect(await page.locator('.row[data-key]').count()).toBe(0);
    await page.goto(`${url}/mirrors`);
    await page.locator('text=No mirroring sources you may list.').waitFor({ timeout: SLOW });
    // and may do nothing: an action is refused by the SubjectAccessReview
    const csrf = ((await (await page.request.get(`${url}/api/me`)).json()) as { csrf: string }).csrf;
    const action = await page.request.post(`${url}/api/actions`, {
      headers: { 'X-CSRF-Token': csrf },
      data: { kind: 'ConfigSync', namespace: home.name, name: 'any', action: 'reconcile' },
    });
    expect(action.status()).toBe(403);
  }, 240_000);
});
