// End to end in a real browser: Debian's Chromium driven by playwright-core against the operator's web UI, with
// the real control plane, operator and Git server. Viewers are ServiceAccounts whose tokens come from the
// TokenRequest API; what each may see and do comes from RBAC alone.
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import {
  createTestCa,
  ensureChromium,
  startGitServer,
  startOidcIssuer,
  startOperator,
  type GitServer,
  type OidcIssuer,
  type OperatorProcess,
  type TestRepo,
} from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NamespaceReplication } from '@syncline/operator';
import { applyConfigSync, condition, configMapYaml, configSync, core, eventually, installCrds, kc, readConfigSync, rest, waitForReady } from './harness.ts';

const run = promisify(execFile);
const SHARD = `webui-${randomBytes(3).toString('hex')}`;
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
const root = join(import.meta.dirname, '..', '..');
// Screenshots of the main views: into docs/ with SYNCLINE_SCREENSHOTS=docs (they change with every run's names).
const screenshots = process.env['SYNCLINE_SCREENSHOTS'] === 'docs' ? join(root, 'docs') : tmpdir();
const SLOW = 90_000;
const IN_GIT = 'hunter2-in-git';
const BY_HAND = 'edited-by-hand';
const VAULT_SECRET = `apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: ${IN_GIT}\n  user: app\n`; // the machine is shared and loaded: waits are generous, each ends as soon as it holds

describe('web UI in a browser', () => {
  let git: GitServer;
  let repo: TestRepo;
  let mine: TestNamespace;
  let other: TestNamespace;
  let operator: OperatorProcess;
  let browser: Browser;
  let url: string;
  let issuer: OidcIssuer;
  let caDir: string;
  const tokens: Record<'editor' | 'reader', string> = { editor: '', reader: '' };

  beforeAll(async () => {
    const executablePath = ensureChromium();
    // What `pnpm build:ui` does: the page's script and style, bundled by esbuild.
    execFileSync(process.execPath, [join(root, 'packages', 'ui', 'src', 'build.ts')], { stdio: 'inherit' });
    await installCrds();
    git = await startGitServer();
    repo = await git.createRepo('webui');
    mine = await testNamespace({ prefix: 'ui' });
    other = await testNamespace({ prefix: 'ui-other' });
    await repo.commit({
      'app/settings.yaml.hbs': configMapYaml('settings', '  greeting: {{ values.greeting }}'),
      'web/page.yaml': configMapYaml('page', '  title: hello'),
      'vault/db.yaml': VAULT_SECRET,
    });
    for (const [namespace, name, path, extra] of [
      [mine.name, 'app', 'app', {}],
      [mine.name, 'web', 'web', {}],
      // drift: Report leaves a hand edit in place, so the page has a drift to show
      [mine.name, 'vault', 'vault', { drift: 'Report' }],
      [mine.name, 'paused', 'web', { suspend: true }],
      [other.name, 'elsewhere', 'web', {}],
    ] as const) {
      const object = configSync(namespace, name, {
        source: { git: { repo: repo.url, revision: 'main', path } },
        values: { greeting: 'hi' },
        targets: [{ name: 'dev', namespace }],
        refreshInterval: '1s',
        ...extra,
      });
      object.metadata = { ...object.metadata, labels: { 'syncline.dev/shard': SHARD } };
      await applyConfigSync(object);
    }
    // Diffs show an object only to a viewer who may get it: the editor may read ConfigMaps and Secrets, the
    // reader ConfigMaps only.
    await grant(mine.name, 'editor', ['get', 'list', 'watch', 'patch'], ['configmaps', 'secrets']);
    await grant(mine.name, 'reader', ['get', 'list', 'watch'], ['configmaps']);
    for (const who of ['editor', 'reader'] as const) {
      tokens[who] =
        (await core.createNamespacedServiceAccountToken({ name: who, namespace: mine.name, body: { spec: { expirationSeconds: 3600 } } })).status?.token ?? '';
    }
    // An OIDC issuer (https, its own test CA, which the operator trusts through NODE_EXTRA_CA_CERTS): alice is
    // in the group that may read the viewer's namespace, bob in none. The client secret is in a Secret.
    const ca = await createTestCa();
    caDir = await mkdtemp(join(tmpdir(), 'syncline-oidc-ca-'));
    await writeFile(join(caDir, 'ca.crt'), ca.caCert);
    issuer = await startOidcIssuer({
      tls: ca.server,
      users: { alice: { sub: 'u-alice', email: 'alice@example.com', groups: ['ui-readers'] }, bob: { sub: 'u-bob', email: 'bob@example.com', groups: [] } },
    });
    await core.createNamespacedSecret({
      namespace: mine.name,
      body: { metadata: { name: 'oidc-client' }, stringData: { 'client-secret': issuer.clientSecret } },
    });
    await bindGroup(mine.name, 'oidc:ui-readers', 'ui-reader');
    // The viewer's namespace is trusted: its NamespaceReplication keeps a standby in another namespace of this
    // cluster, which the tenancy rule allows only from a trusted namespace (what a viewer sees is RBAC's alone).
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      env: { NODE_EXTRA_CA_CERTS: join(caDir, 'ca.crt') },
      args: [
        '--shard',
        SHARD,
        '--mirror',
        'off',
        '--ui-addr',
        '127.0.0.1:0',
        '--trusted-namespaces',
        mine.name,
        '--ui-oidc-issuer',
        issuer.issuer,
        '--ui-oidc-client-id',
        issuer.clientId,
        '--ui-oidc-client-secret',
        `${mine.name}/oidc-client`,
        '--ui-oidc-username-claim',
        'email',
        '--ui-oidc-groups-prefix',
        'oidc:',
      ],
    });
    url = `http://${operator.uiAddress ?? ''}`;
    issuer.allowRedirect(`${url}/oidc/callback`);
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    await waitForReady(mine.name, 'app', () => true, SLOW);
    await waitForReady(mine.name, 'web', () => true, SLOW);
    await waitForReady(mine.name, 'vault', () => true, SLOW);
  });
  afterAll(async () => {
    await browser?.close();
    await operator?.stop();
    await mine?.[Symbol.asyncDispose]();
    await other?.[Symbol.asyncDispose]();
    await git?.close();
    await issuer?.close();
    if (caDir !== undefined) await rm(caDir, { recursive: true, force: true });
  });

  /** Binds the ui-reader Role (made by grant) to a group, as a person's RoleBinding would. */
  async function bindGroup(namespace: string, group: string, role: string): Promise<void> {
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: `group-${role}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
        subjects: [{ kind: 'Group', name: group, apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });
  }

  async function grant(namespace: string, account: string, verbs: string[], readable: string[]): Promise<void> {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: account } } });
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: `ui-${account}` },
        rules: [
          { apiGroups: ['syncline.dev'], resources: ['configsyncs', 'manifestsyncs', 'namespacereplications', 'remoteclusters'], verbs },
          { apiGroups: [''], resources: readable, verbs: ['get'] },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: `ui-${account}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `ui-${account}` },
        subjects: [{ kind: 'ServiceAccount', name: account, namespace }],
      },
    });
  }

  async function signIn(who: 'editor' | 'reader', colorScheme: 'light' | 'dark' = 'light'): Promise<Page> {
    const page = await (await browser.newContext({ colorScheme, viewport: { width: 1200, height: 900 } })).newPage();
    page.setDefaultTimeout(SLOW);
    await page.goto(`${url}/`);
    await page.waitForURL(`${url}/login`);
    await page.fill('#token', tokens[who]);
    await page.click('button[type=submit]');
    await page.waitForURL(`${url}/`);
    return page;
  }

  it('signs in with a token, refuses a bad one, and shows only the namespaces the viewer may list', async () => {
    // given a token the API server does not know, when it is posted, then the sign-in page says so
    const stranger = await (await browser.newContext()).newPage();
    await stranger.goto(`${url}/login`);
    await stranger.fill('#token', 'not-a-token');
    await stranger.click('button[type=submit]');
    await stranger.waitForURL(`${url}/login?failed=token`);
    expect(await stranger.textContent('[role=alert]')).toContain('did not accept');
    // and the API answers 401 without a session
    expect((await stranger.request.get(`${url}/api/events`)).status()).toBe(401);

    // given the editor, who may list in one namespace only, when signed in
    const page = await signIn('editor');
    await page.waitForSelector(`[data-key="ConfigSync/${mine.name}/web"]`);
    // then its own namespace's syncs show, with their state, and the other namespace's never do
    expect(await page.textContent(`[data-key="ConfigSync/${mine.name}/paused"]`)).toContain('suspended');
    const keys = await Promise.all((await page.locator('[data-key]').all()).map((row) => row.getAttribute('data-key')));
    expect(keys.filter((k) => k?.includes(`/${other.name}/`) === true)).toEqual([]);
    expect(keys).toContain(`ConfigSync/${mine.name}/app`);
    // and a filter is in the URL: opening it again shows the same view
    await page.selectOption('select[aria-label=State]', 'suspended');
    await page.waitForURL(/state=suspended/);
    await page.goto(page.url());
    await page.waitForSelector(`[data-key="ConfigSync/${mine.name}/paused"]`);
    expect(await page.$(`[data-key="ConfigSync/${mine.name}/web"]`)).toBeNull();
    // and the page is served with a strict CSP and the session cookie is HttpOnly and SameSite=Strict
    const response = await page.request.get(`${url}/`);
    const csp = response.headers()['content-security-policy'] ?? '';
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "form-action 'self'",
    ])
      expect(csp).toContain(directive);
    expect(csp).not.toContain('unsafe');
    const [cookie] = await page.context().cookies();
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
  }, 240_000);

  it('shows a broken template with file:line on the sync page as soon as the status says so, without a reload', async () => {
    // given the editor on the ConfigSync's page, Ready
    const page = await signIn('editor', 'dark');
    await page.goto(`${url}/objects/ConfigSync/${mine.name}/app`);
    await page.waitForSelector('h1 .badge.ready');
    // (page-side code as strings: this file is typechecked without the DOM's types)
    await page.evaluate('window.notReloaded = true');

    // when main gets a broken template
    const broken = await repo.commit({ 'app/settings.yaml.hbs': configMapYaml('settings', '  greeting: {{#if values.greeting}}unclosed') });
    const statusAt = eventually(
      async () => {
        const cs = await readConfigSync(mine.name, 'app');
        return condition(cs, 'InvalidSource')?.status === 'True' && cs.status?.lastAttemptedRevision === broken ? Date.now() : undefined;
      },
      'InvalidSource in status',
      SLOW,
    );
    // then the page shows the file and line, pushed over the stream
    // (a locator, not waitForFunction: the page's CSP forbids the eval that would need)
    await page
      .locator('p.summary.error')
      .filter({ hasText: /settings\.yaml\.hbs:\d+:\d+/ })
      .first()
      .waitFor({ timeout: SLOW });
    const shownAt = Date.now();
    const delay = shownAt - (await statusAt);
    console.log(`[webui] file:line on the page ${delay} ms after a 150 ms status poll saw it`);
    expect(delay).toBeLessThan(5_000);
    expect(await page.evaluate('window.notReloaded')).toBe(true);
    expect(await page.textContent('h1 .badge')).toBe('failed');
    // and the comparison with Git cannot render either: the error is shown once, where the page leads, and the
    // conditions and the comparison point to it
    await page.locator('section.objects .diff-error').waitFor({ timeout: SLOW });
    const places = await page
      .locator('p.summary, .attention-line, .conditions pre.message, section.targets td.msg, section.objects .diff-error')
      .allTextContents();
    expect(
      places.filter((text) => /settings\.yaml\.hbs:\d+:\d+/.test(text)),
      places.join('\n'),
    ).toHaveLength(1);
    expect(await page.locator('.conditions .above').count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(screenshots, 'ui-configsync.png'), fullPage: true });

    // and the overview lists it under "needs attention"
    await page.goto(`${url}/`);
    await page.waitForSelector('.attention');
    expect(await page.textContent('.attention')).toContain(`${mine.name}/app`);
    const light = await signIn('editor', 'light');
    await light.waitForSelector('.attention');
    await light.screenshot({ path: join(screenshots, 'ui-overview.png'), fullPage: true });
    // and on a phone's width the rows stack into one column
    await light.setViewportSize({ width: 390, height: 844 });
    const row = await light.locator(`[data-key="ConfigSync/${mine.name}/app"] a`).boundingBox();
    expect(row?.width).toBeLessThanOrEqual(390);
    expect(await light.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await light.screenshot({ path: join(screenshots, 'ui-overview-phone.png'), fullPage: true });
  }, 240_000);

  it('suspends for a viewer allowed to patch, and refuses the same click by a read-only viewer (403)', async () => {
    // given the reader on the web sync's page, when they click Suspend, then 403 shows and nothing changed
    const reader = await signIn('reader');
    await reader.goto(`${url}/objects/ConfigSync/${mine.name}/web`);
    await reader.click('button:has-text("Suspend")');
    await reader.waitForSelector('.result.bad');
    expect(await reader.textContent('.result.bad')).toContain('403');
    expect((await readConfigSync(mine.name, 'web')).spec.suspend).not.toBe(true);

    // given the editor, when they click Suspend, then the change lands and the page shows it live
    const editor = await signIn('editor');
    await editor.goto(`${url}/objects/ConfigSync/${mine.name}/web`);
    await editor.click('button:has-text("Suspend")');
    await editor.waitForSelector('.result.ok');
    await eventually(async () => ((await readConfigSync(mine.name, 'web')).spec.suspend === true ? true : undefined), 'spec.suspend to be true', SLOW);
    await editor.waitForSelector('h1 .badge.suspended');

    // and an action without the page's CSRF token is refused even with the session cookie
    const forged = await editor.request.post(`${url}/api/actions`, { data: { kind: 'ConfigSync', namespace: mine.name, name: 'web', action: 'resume' } });
    expect(forged.status()).toBe(403);

    // when the editor resumes it, then it runs again
    await editor.click('button:has-text("Resume")');
    await eventually(async () => ((await readConfigSync(mine.name, 'web')).spec.suspend === false ? true : undefined), 'spec.suspend to be false', SLOW);
    await editor.waitForSelector('h1 .badge.ready');
  }, 240_000);

  it('rolls back to a deploy in the history for a viewer allowed to patch, and refuses it for a read-only viewer', async () => {
    // given web with two deploys in its history
    const first = (await readConfigSync(mine.name, 'web')).status?.sourceRevision ?? '';
    const second = await repo.commit({ 'web/page.yaml': configMapYaml('page', '  title: second') });
    await waitForReady(mine.name, 'web', (cs) => cs.status?.sourceRevision === second && (cs.status.history ?? []).some((h) => h.revision === first), SLOW);
    const rollback = `button.rollback[data-revision="${first}"]`;

    // when a viewer compares the two deploys, then the page shows what changed between them
    const viewer = await signIn('reader');
    await viewer.goto(`${url}/objects/ConfigSync/${mine.name}/web`);
    await viewer.check(`input[name=from][aria-label="compare from ${first}"]`);
    await viewer.check(`input[name=to][aria-label="compare to ${second}"]`);
    await viewer.click('button.compare');
    const compared = (await viewer.locator('.deploy-diff pre.diff').first().textContent({ timeout: SLOW })) ?? '';
    expect(compared).toContain(`core/ConfigMap/${mine.name}/page`);
    expect(compared).toContain('-  title: hello');
    expect(compared).toContain('+  title: second');
    await viewer.locator('section.history').screenshot({ path: join(screenshots, 'ui-deploy-diff.png') });

    // when the reader clicks Roll back on the first deploy, then 403 and the revision still follows main
    const reader = await signIn('reader');
    await reader.goto(`${url}/objects/ConfigSync/${mine.name}/web`);
    await reader.click(rollback);
    await reader.waitForSelector('.result.bad');
    expect(await reader.textContent('.result.bad')).toContain('403');
    expect((await readConfigSync(mine.name, 'web')).spec.source.git.revision).toBe('main');

    // when the editor clicks it, then the revision is pinned to that commit and applied
    const editor = await signIn('editor');
    await editor.goto(`${url}/objects/ConfigSync/${mine.name}/web`);
    await editor.click(rollback);
    await editor.waitForSelector('.result.ok');
    await waitForReady(mine.name, 'web', (cs) => cs.spec.source.git.revision === first && cs.status?.sourceRevision === first, SLOW);
  }, 240_000);

  it('fails a NamespaceReplication over from its page (spec.failover, as syncline failover), and back', async () => {
    // given a replication of the viewer's namespace into a standby namespace, Ready
    await using standby = await testNamespace({ prefix: 'ui-dr' });
    const path = `/apis/syncline.dev/v1alpha1/namespaces/${mine.name}/namespacereplications/standby`;
    await rest.request({
      method: 'PATCH',
      path,
      query: { fieldManager: 'syncline-tests', force: true },
      contentType: 'application/apply-patch+yaml',
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'NamespaceReplication',
        metadata: { name: 'standby', namespace: mine.name, labels: { 'syncline.dev/shard': SHARD } },
        spec: { destination: { namespace: standby.name }, resourceTypes: ['Deployment'] },
      },
    });
    const conditionOf = async (type: string): Promise<string | undefined> =>
      (await rest.request<NamespaceReplication>({ method: 'GET', path })).status?.conditions?.find((c) => c.type === type)?.status;
    await eventually(async () => ((await conditionOf('Ready')) === 'True' ? true : undefined), 'the replication to be Ready', SLOW);

    // when the editor clicks Fail over on its page, then the operator fails it over
    const editor = await signIn('editor');
    await editor.goto(`${url}/objects/NamespaceReplication/${mine.name}/standby`);
    await editor.click('button:has-text("Fail over")');
    await editor.waitForSelector('.result.ok');
    await eventually(async () => ((await conditionOf('FailedOver')) === 'True' ? true : undefined), 'FailedOver', SLOW);
    // and the page shows it live, offering the way back
    await editor.locator('.cond', { hasText: 'FailedOver' }).filter({ hasText: 'True' }).first().waitFor({ timeout: SLOW });
    // with the standby's state, lag and the objects it holds by kind
    await editor.locator('section.replication dd', { hasText: 'failed over' }).first().waitFor({ timeout: SLOW });
    expect(await editor.textContent('section.replication')).toContain('Objects in the standby, by kind');
    await editor.click('button:has-text("Fail back")');
    await eventually(async () => ((await conditionOf('FailedOver')) !== 'True' ? true : undefined), 'failed back', SLOW);
  }, 240_000);

  it('shows every applied object with its health and drift, the live diff against Git, and never a Secret value', async () => {
    // given the vault sync (drift: Report) in sync, when its page opens, then its Secret is listed in sync
    const page = await signIn('editor');
    await page.goto(`${url}/objects/ConfigSync/${mine.name}/vault`);
    const secretRow = page.locator(`.applied-object[data-object="core/Secret/${mine.name}/db"]`);
    await secretRow.locator('.change.in-sync').waitFor({ timeout: SLOW });

    // when someone edits the Secret's value by hand with kubectl
    const edited = Buffer.from(BY_HAND).toString('base64');
    await run(
      'kubectl',
      ['--kubeconfig', testKubeconfigPath(), '-n', mine.name, 'patch', 'secret', 'db', '--type', 'merge', '-p', JSON.stringify({ data: { password: edited } })],
      { timeout: 60_000 },
    );
    await eventually(
      async () => (condition(await readConfigSync(mine.name, 'vault'), 'Synced')?.reason === 'DriftDetected' ? true : undefined),
      'DriftDetected',
      SLOW,
    );

    // then the page shows it drifted, live, with the diff of what Git would restore: masked
    await page.waitForSelector('h1 .badge.drifted');
    await secretRow.locator('.change.drifted').waitFor({ timeout: SLOW });
    const diff = (await secretRow.locator('pre.diff').textContent()) ?? '';
    expect(diff).toContain(`live/core/Secret/${mine.name}/db`);
    expect(diff).toContain('*** (changed)');
    await page.screenshot({ path: join(screenshots, 'ui-configsync-drift.png'), fullPage: true });
    // and no value of the Secret reached the browser: not in the page, not in what the API answered
    const answer = await page.request.get(`${url}/api/diff/ConfigSync/${mine.name}/vault`);
    expect(answer.status()).toBe(200);
    for (const text of [await page.content(), await answer.text()]) {
      for (const value of [IN_GIT, BY_HAND]) {
        expect(text).not.toContain(Buffer.from(value).toString('base64'));
      }
      expect(text).not.toContain(IN_GIT);
      expect(text).not.toContain(BY_HAND);
    }
    // and the overview counts it as drifted and lists why it needs attention, next to the recent activity
    await page.goto(`${url}/`);
    await page
      .locator('[data-count="ConfigSync/drifted"]')
      .filter({ hasText: /^[1-9]/ })
      .waitFor({ timeout: SLOW });
    await page.locator(`.attention li[data-attention="ConfigSync/${mine.name}/vault"]`).filter({ hasText: 'drifted' }).waitFor({ timeout: SLOW });
    expect(await page.textContent('.activity')).toContain(`${mine.name}/`);
    // and the drifted filter is a URL that shows it
    await page.goto(`${url}/?state=drifted`);
    await page.waitForSelector(`[data-key="ConfigSync/${mine.name}/vault"]`);
    expect(await page.$(`.row[data-key="ConfigSync/${mine.name}/web"]`)).toBeNull();
    // and a viewer who may get the sync but not Secrets sees that it drifted, not the diff
    const reader = await signIn('reader');
    const hidden = (await (await reader.request.get(`${url}/api/diff/ConfigSync/${mine.name}/vault`)).json()) as {
      targets: { objects: { label: string; change: string; diff: string; note?: string }[] }[];
    };
    expect(hidden.targets[0]?.objects.find((o) => o.label === `core/Secret/${mine.name}/db`)).toMatchObject({ change: 'drifted', diff: '' });
    expect(JSON.stringify(hidden)).toContain('you may not get this object');
    // and a viewer of another namespace may not read its diff
    expect((await reader.request.get(`${url}/api/diff/ConfigSync/${other.name}/elsewhere`)).status()).toBe(403);
  }, 240_000);

  it("signs in with OIDC (code + PKCE): the id token's user and groups decide what the viewer sees", async () => {
    // given the sign-in page, when alice picks OIDC and signs in at the issuer
    const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(SLOW);
    await page.goto(`${url}/login`);
    await page.click('a.oidc');
    await page.waitForURL(`${issuer.issuer}/authorize?**`);
    // (the authorization request carries a PKCE challenge, state and nonce)
    const request = new URL(page.url()).searchParams;
    expect(request.get('code_challenge_method')).toBe('S256');
    expect(request.get('state')?.length).toBeGreaterThan(20);
    expect(request.get('nonce')?.length).toBeGreaterThan(20);
    await page.click('button[value=alice]');
    // then she is back on the overview as alice@example.com, and sees her group's namespace only
    await page.waitForURL(`${url}/`);
    await page.waitForSelector(`[data-key="ConfigSync/${mine.name}/web"]`);
    expect(await page.textContent('.user span')).toBe('alice@example.com');
    const keys = await Promise.all((await page.locator('.row[data-key]').all()).map((row) => row.getAttribute('data-key')));
    expect(keys.filter((k) => k?.includes(`/${other.name}/`) === true)).toEqual([]);
    expect(issuer.redeemed()).toBeGreaterThanOrEqual(1);
    // and her group may not patch: an action is refused by the SubjectAccessReview for her user and groups
    await page.goto(`${url}/objects/ConfigSync/${mine.name}/web`);
    await page.click('button:has-text("Reconcile now")');
    await page.waitForSelector('.result.bad');
    expect(await page.textContent('.result.bad')).toContain('403: forbidden: alice@example.com may not patch');

    // given bob, in no group, when he signs in, then he sees nothing
    const bob = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
    bob.setDefaultTimeout(SLOW);
    await bob.goto(`${url}/login`);
    await bob.click('a.oidc');
    await bob.click('button[value=bob]');
    await bob.waitForURL(`${url}/`);
    await bob.waitForSelector('.banner');
    expect(await bob.locator('.row[data-key]').count()).toBe(0);

    // given a callback whose state this browser did not start, then no session is made
    const forged = await (await browser.newContext()).newPage();
    await forged.goto(`${url}/oidc/callback?code=x&state=not-ours`);
    await forged.waitForURL(/\/login\?failed=/);
    expect(await forged.textContent('[role=alert]')).toContain('not started here');
    // and a denied sign-in comes back to the sign-in page with the issuer's answer
    const denied = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
    await denied.goto(`${url}/oidc/login`);
    await denied.click('button[value="1"]');
    await denied.waitForURL(/\/login\?failed=/);
    expect(await denied.textContent('[role=alert]')).toContain('access_denied');
    // and without a sign-in nobody is let in (no anonymous mode unless --ui-anonymous)
    expect((await forged.request.get(`${url}/api/events`)).status()).toBe(401);
  }, 240_000);

  it("maps a ManifestSync's copies: in sync in one namespace, and a conflict with the object that holds the name in another", async () => {
    // given a ConfigMap copied into the viewer's namespace (renamed) and into a namespace where a foreign
    // ConfigMap of that name exists
    await using away = await testNamespace({ prefix: 'ui-copy' });
    await core.createNamespacedConfigMap({ namespace: mine.name, body: { metadata: { name: 'shared' }, data: { a: '1' } } });
    await core.createNamespacedConfigMap({ namespace: away.name, body: { metadata: { name: 'shared' }, data: { mine: 'not yours' } } });
    const path = `/apis/syncline.dev/v1alpha1/namespaces/${mine.name}/manifestsyncs/copies`;
    await rest.request({
      method: 'PATCH',
      path,
      query: { fieldManager: 'syncline-tests', force: true },
      contentType: 'application/apply-patch+yaml',
      body: {
        apiVersion: 'syncline.dev/v1alpha1',
        kind: 'ManifestSync',
        metadata: { name: 'copies', namespace: mine.name, labels: { 'syncline.dev/shard': SHARD } },
        spec: {
          sourceRef: { apiVersion: 'v1', kind: 'ConfigMap', name: 'shared' },
          targets: [{ namespace: mine.name, name: 'shared-copy' }, { namespace: away.name }],
        },
      },
    });
    await eventually(
      async () =>
        (await rest.request<{ status?: { targets?: { phase: string }[] } }>({ method: 'GET', path })).status?.targets?.length === 2 ? true : undefined,
      'both copies in status',
      SLOW,
    );

    // when the editor opens its page, then the copies are mapped: where, whether in sync, and the conflict
    const page = await signIn('editor');
    await page.goto(`${url}/objects/ManifestSync/${mine.name}/copies`);
    const rows = page.locator('section.targets tbody tr');
    const conflict = rows.filter({ hasText: away.name });
    await conflict.filter({ hasText: /not managed by Syncline/ }).waitFor({ timeout: SLOW });
    await rows.filter({ hasText: mine.name }).filter({ hasText: 'yes' }).waitFor({ timeout: SLOW });
    // (the holder is named: the field manager that wrote the foreign object)
    expect(await conflict.textContent()).toMatch(/field managers?: /);
    expect(await conflict.locator('td').nth(2).textContent()).not.toBe('yes');
    // and the overview lists it as needing attention, naming the copy
    await page.goto(`${url}/`);
    await page.locator(`.attention li[data-attention="ManifestSync/${mine.name}/copies"]`).filter({ hasText: away.name }).waitFor({ timeout: SLOW });
  }, 240_000);

  it("shows a RemoteCluster's reachability, version and last probe, and an unreachable one under needs attention", async () => {
    // given this control plane as a reachable RemoteCluster (its CA and admin token) and a port nothing listens on
    const cluster = kc.getCurrentCluster();
    const token = kc.getCurrentUser()?.token ?? '';
    const ca = cluster?.caData === undefined ? '' : Buffer.from(cluster.caData, 'base64').toString();
    await core.createNamespacedSecret({ namespace: mine.name, body: { metadata: { name: 'here' }, stringData: { 'ca.crt': ca, token } } });
    const apply = (name: string, spec: Record<string, unknown>): Promise<unknown> =>
      rest.request({
        method: 'PATCH',
        path: `/apis/syncline.dev/v1alpha1/namespaces/${mine.name}/remoteclusters/${name}`,
        query: { fieldManager: 'syncline-tests', force: true },
        contentType: 'application/apply-patch+yaml',
        body: {
          apiVersion: 'syncline.dev/v1alpha1',
          kind: 'RemoteCluster',
          metadata: { name, namespace: mine.name, labels: { 'syncline.dev/shard': SHARD } },
          spec: { ...spec, tokenSecretRef: { name: 'here', key: 'token' }, probeInterval: '5s' },
        },
      });
    await apply('here', { server: cluster?.server ?? '', caSecretRef: { name: 'here', key: 'ca.crt' } });
    await apply('nowhere', { server: 'https://127.0.0.1:1', caSecretRef: { name: 'here', key: 'ca.crt' } });

    const statusOf = async (name: string): Promise<{ conditions?: { type: string; status: string; reason: string; message: string }[] } | undefined> =>
      (
        await rest.request<{ status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } }>({
          method: 'GET',
          path: `/apis/syncline.dev/v1alpha1/namespaces/${mine.name}/remoteclusters/${name}`,
        })
      ).status;
    await eventually(async () => ((await statusOf('here'))?.conditions?.some((c) => c.type === 'Ready') === true ? true : undefined), 'a probe of here', SLOW);

    // when the editor opens the reachable one, then its page says so, with the server's version and the probe time
    const page = await signIn('editor');
    await page.goto(`${url}/objects/RemoteCluster/${mine.name}/here`);
    const facts = page.locator('section.facts');
    await facts.filter({ hasText: /reachable\s*yes/ }).waitFor({ timeout: SLOW });
    expect(await facts.textContent()).toMatch(/serverVersion\s*v1\.\d+/);
    expect(await facts.textContent()).toMatch(/lastProbeTime\s*\d{4}-/);
    // and the unreachable one says why, and is listed under needs attention
    await page.goto(`${url}/objects/RemoteCluster/${mine.name}/nowhere`);
    await page
      .locator('section.facts')
      .filter({ hasText: /reachable\s*no \(Unreachable\)/ })
      .waitFor({ timeout: SLOW });
    await page.goto(`${url}/`);
    await page.locator(`.attention li[data-attention="RemoteCluster/${mine.name}/nowhere"]`).filter({ hasText: 'unreachable' }).waitFor({ timeout: SLOW });
  }, 240_000);

  it("draws each target's resource tree from ownerReferences (health, Events), fills HEALTH, names each deploy's commit and author; a viewer sees only what they may read", async () => {
    // given a sync of a Deployment and a ConfigMap, from a commit with a message
    const deployment = `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: shop\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: shop}\n  template:\n    metadata:\n      labels: {app: shop}\n    spec:\n      containers:\n      - name: shop\n        image: registry.example/shop:1\n`;
    const sha = await repo.commit(
      { 'tree/shop.yaml': deployment, 'tree/settings.yaml': configMapYaml('shop-settings', '  a: "1"') },
      { message: 'Ship the shop Deployment\n\nIts first release.' },
    );
    const object = configSync(mine.name, 'tree', {
      source: { git: { repo: repo.url, revision: sha, path: 'tree' } },
      targets: [{ name: 'dev', namespace: mine.name }],
      refreshInterval: '1h',
    });
    object.metadata = { ...object.metadata, labels: { 'syncline.dev/shard': SHARD } };
    await applyConfigSync(object);
    await eventually(async () => ((await readConfigSync(mine.name, 'tree')).status?.sourceRevision === sha ? true : undefined), 'the tree sync to apply', SLOW);
    // and the editor may read Deployments, what they own and the Events; the reader may not
    await rbac.createNamespacedRole({
      namespace: mine.name,
      body: {
        metadata: { name: 'ui-editor-workloads' },
        rules: [
          { apiGroups: ['apps'], resources: ['deployments', 'replicasets'], verbs: ['get', 'list'] },
          { apiGroups: [''], resources: ['pods', 'events'], verbs: ['get', 'list'] },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: mine.name,
      body: {
        metadata: { name: 'ui-editor-workloads' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ui-editor-workloads' },
        subjects: [{ kind: 'ServiceAccount', name: 'editor', namespace: mine.name }],
      },
    });

    // and what a Deployment controller makes, as it makes it: a ReplicaSet owned by the Deployment and a Pod owned
    // by the ReplicaSet, with an Event on the Pod (this control plane runs no Deployment controller and no nodes;
    // the tree follows ownerReferences, whoever wrote them)
    const shopUid = (await rest.request<{ metadata: { uid: string } }>({ method: 'GET', path: `/apis/apps/v1/namespaces/${mine.name}/deployments/shop` }))
      .metadata.uid;
    const owner = (apiVersion: string, kind: string, name: string, uid: string) => [
      { apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true },
    ];
    const template = {
      metadata: { labels: { app: 'shop', 'pod-template-hash': '7d9f' } },
      spec: { containers: [{ name: 'shop', image: 'registry.example/shop:1' }] },
    };
    const rs = await rest.request<{ metadata: { uid: string } }>({
      method: 'POST',
      path: `/apis/apps/v1/namespaces/${mine.name}/replicasets`,
      body: {
        metadata: { name: 'shop-7d9f', ownerReferences: owner('apps/v1', 'Deployment', 'shop', shopUid) },
        spec: { replicas: 1, selector: { matchLabels: template.metadata.labels }, template },
      },
    });
    const pod = await rest.request<{ metadata: { uid: string } }>({
      method: 'POST',
      path: `/api/v1/namespaces/${mine.name}/pods`,
      body: {
        metadata: { name: 'shop-7d9f-x2k4', labels: template.metadata.labels, ownerReferences: owner('apps/v1', 'ReplicaSet', 'shop-7d9f', rs.metadata.uid) },
        spec: template.spec,
      },
    });
    const now = new Date().toISOString();
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${mine.name}/events`,
      body: {
        metadata: { name: 'shop-7d9f-x2k4.1' },
        involvedObject: { apiVersion: 'v1', kind: 'Pod', name: 'shop-7d9f-x2k4', namespace: mine.name, uid: pod.metadata.uid },
        type: 'Warning',
        reason: 'FailedScheduling',
        message: '0/0 nodes are available',
        count: 3,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component: 'default-scheduler' },
      },
    });

    // when the editor opens its page
    const page = await signIn('editor');
    await page.goto(`${url}/objects/ConfigSync/${mine.name}/tree`);
    // then the target's tree holds the Deployment, under it the ReplicaSet, under that the Pod with its Event
    const target = page.locator('.tree-target[data-target="dev"]');
    const shop = target.locator('.tree-node[data-node="Deployment/shop"]');
    const podNode = shop.locator('.tree-node[data-node="ReplicaSet/shop-7d9f"] .tree-node[data-node="Pod/shop-7d9f-x2k4"]');
    await podNode.locator('.node-events .reason').filter({ hasText: 'FailedScheduling' }).waitFor({ timeout: SLOW });
    expect(await podNode.locator('.node-events').textContent()).toContain('0/0 nodes are available (x3)');
    expect(await shop.locator(':scope > .health').textContent()).toMatch(/^(Current|InProgress|Failed)$/);
    expect(await target.locator('.tree-node[data-node="ConfigMap/shop-settings"] > .health').textContent()).toBe('Current');
    // and the targets' HEALTH column is filled from status.targets[].health
    const health = (await page.locator('section.targets tbody tr').first().locator('td').nth(5).textContent()) ?? '';
    expect(health).toMatch(/^(Healthy|Progressing|Degraded|Unknown) \(\d+ of 2( failed| not read)?\)$/);
    // and the deploy history names the commit's subject and author
    await page.locator('section.history td.commit-message').filter({ hasText: 'Ship the shop Deployment' }).waitFor({ timeout: SLOW });
    expect(await page.locator('section.history td.commit-author').first().textContent()).toBe('Syncline Test');
    await page.screenshot({ path: join(screenshots, 'ui-resource-tree.png'), fullPage: true });

    // and the reader, who may get the sync but not Deployments, sees neither it nor what it owns
    const reader = await signIn('reader');
    const tree = (await (await reader.request.get(`${url}/api/tree/ConfigSync/${mine.name}/tree`)).json()) as {
      targets: { nodes: { kind: string; children: unknown[] }[]; hidden: number }[];
    };
    expect(tree.targets[0]?.nodes.map((n) => n.kind)).toEqual(['ConfigMap']);
    expect(tree.targets[0]?.hidden).toBe(1);
    expect(JSON.stringify(tree)).not.toContain('ReplicaSet');
    // and a viewer of another namespace gets neither its tree nor its commits
    expect((await reader.request.get(`${url}/api/tree/ConfigSync/${other.name}/elsewhere`)).status()).toBe(403);
    expect((await reader.request.get(`${url}/api/commits/ConfigSync/${other.name}/elsewhere`)).status()).toBe(403);
  }, 300_000);

  it('filters the overview by ?state= as typed (any case, kubectl words) and says so when the state does not exist', async () => {
    const page = await signIn('editor');
    await page.goto(`${url}/?state=Suspended`);
    await page.waitForSelector(`[data-key="ConfigSync/${mine.name}/paused"]`);
    expect(await page.$(`.row[data-key="ConfigSync/${mine.name}/app"]`)).toBeNull();
    expect(await page.locator('select[aria-label=State]').inputValue()).toBe('suspended');
    await page.goto(`${url}/?state=paused`);
    await page.waitForSelector(`[data-key="ConfigSync/${mine.name}/paused"]`);
    await page.goto(`${url}/?state=sleeping`);
    await page.locator('.list [role=alert]').filter({ hasText: 'No state "sleeping"' }).waitFor({ timeout: SLOW });
    expect(await page.locator('.list .row').count()).toBe(0);
  }, 120_000);
});
