// The webhook receiver of the real operator process, on the test control plane, with the test Git server:
// each provider's signed push makes a change appear long before the (1 h) refresh interval; every bad
// input is refused without waking anything; a push to a quiet repository wakes its syncs at once, and the
// pushes of a burst that follow it coalesce into one more wake.
import { startGitServer, startOperator, type GitServer, type OperatorProcess, type TestRepo } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coalescingWindows } from '@syncline/operator';
import { configMapYaml, applyConfigSync, configMapData, configSync, core, eventually, installCrds, waitForReady } from '../e2e/harness.ts';
import { providerHeaders, pushDelivery, send, type Provider } from './deliveries.ts';

const secrets: Record<Provider, string> = {
  github: 'gh-3f9c1a7e5b',
  gitlab: 'glpat-webhook-8d2e4f6a',
  gitea: 'gitea-1b3d5f7h9j',
  bitbucket: 'bb-0a2c4e6g8i',
  generic: 'generic-5k7m9o1q3s',
};
const cm = (name: string, value: string): string => configMapYaml(name, `  value: "${value}"`);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Wait until `count()` has not changed for `quietMs` (at most a minute). */
async function settled(count: () => number, quietMs: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  let last = count();
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() > deadline) throw new Error(`still changing after a minute (at ${last})`);
    await sleep(100);
    const now = count();
    if (now !== last) {
      last = now;
      since = Date.now();
    }
  }
}

describe('webhook receiver', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let operator: OperatorProcess;
  let address: string;

  /** A repo with one ConfigMap, a ConfigSync that follows `revision` with a 1 h refresh interval, synced once. */
  async function followedRepo(name: string, options: { revision?: string } = {}): Promise<{ repo: TestRepo; value: () => Promise<string | undefined> }> {
    const repo = await git.createRepo(name);
    const first = await repo.commit({ 'app/cm.yaml': cm(name, 'v0') });
    if (options.revision !== undefined && !options.revision.startsWith('main')) await repo.tag(options.revision, 'main');
    await applyConfigSync(
      configSync(ns.name, name, {
        source: { git: { repo: repo.url, revision: options.revision ?? 'main', path: 'app' } },
        refreshInterval: '1h',
        targets: [{ name: 'dev', namespace: ns.name }],
      }),
    );
    await waitForReady(ns.name, name, (c) => c.status?.sourceRevision === first);
    // The status write re-runs the reconcile once; let it finish so only a webhook can explain what follows.
    await sleep(500);
    return { repo, value: async () => (await configMapData(ns.name, name))?.['value'] };
  }

  // Waits, not claims about speed: on a loaded machine (a first `pnpm test` builds the control plane and Helm
  // alongside) a reconcile can take seconds; what a webhook promises is "long before the refresh interval".
  const updated = (value: () => Promise<string | undefined>, expected: string, timeoutMs = 60_000): Promise<true> =>
    eventually(async () => ((await value()) === expected ? true : undefined), `the value ${expected}`, timeoutMs);

  beforeAll(async () => {
    await installCrds();
    git = await startGitServer();
    ns = await testNamespace({ prefix: 'webhooks' });
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 'syncline-webhooks' }, stringData: { ...secrets, github: `${secrets.github}\n` } },
    });
    operator = await startOperator({
      kubeconfig: testKubeconfigPath(),
      args: ['--namespace', ns.name, '--webhook-secret', `${ns.name}/syncline-webhooks`, '--webhook-read-timeout', '1', '--concurrency', '2'],
    });
    if (operator.webhookAddress === undefined) throw new Error('the operator started without a webhook receiver');
    address = operator.webhookAddress;
  });
  afterAll(async () => {
    await operator.stop();
    await ns[Symbol.asyncDispose]();
    await git.close();
  });

  it('a GitHub push applies the change at once; without it nothing moves for the 1 h interval', async () => {
    // given a synced ConfigSync with a 1 h refresh interval and a new commit
    const { repo, value } = await followedRepo('github-repo');
    await repo.commit({ 'app/cm.yaml': cm('github-repo', 'v1') });
    await sleep(1_500);
    expect(await value()).toBe('v0');

    // when GitHub delivers the push, then it is accepted and the change is applied (within a minute: however
    // loaded the machine, far inside the 1 h interval that would otherwise apply it)
    const answer = await send(address, pushDelivery('github', repo.url, secrets.github));
    expect(answer).toEqual({ status: 202, body: { result: 'accepted', woken: 1 } });
    await updated(value, 'v1');
  });

  const others: [string, Provider, { dataCenter?: boolean }][] = [
    ['GitLab', 'gitlab', {}],
    ['Gitea', 'gitea', {}],
    ['Bitbucket Cloud', 'bitbucket', {}],
    ['Bitbucket Data Center', 'bitbucket', { dataCenter: true }],
    ['generic', 'generic', {}],
  ];
  for (const [name, provider, options] of others) {
    it(`a ${name} push applies the change`, async () => {
      const repoName = `${provider}${options.dataCenter === true ? '-dc' : ''}-repo`;
      const { repo, value } = await followedRepo(repoName);
      await repo.commit({ 'app/cm.yaml': cm(repoName, 'v1') });
      expect(await send(address, pushDelivery(provider, repo.url, secrets[provider], options))).toEqual({
        status: 202,
        body: { result: 'accepted', woken: 1 },
      });
      await updated(value, 'v1');
    });
  }

  it('a tag push wakes the syncs that follow the tag; a pinned sync is never woken', async () => {
    // given one sync following tag v1.0.0 and one pinned to the first commit of the same repo
    const { repo, value } = await followedRepo('tagged-repo', { revision: 'v1.0.0' });
    const pinned = await repo.resolve('main');
    // (renamed by a patch: an object another ConfigSync owns is a conflict, whatever the policy)
    const rename = { target: { kind: 'ConfigMap', name: 'tagged-repo' }, patch: { metadata: { name: 'tagged-pinned' } } };
    await applyConfigSync(
      configSync(ns.name, 'tagged-pinned', {
        source: { git: { repo: repo.url, revision: pinned, path: 'app' } },
        refreshInterval: '1h',
        targets: [{ name: 'pinned', namespace: ns.name, patches: [rename] }],
      }),
    );
    await waitForReady(ns.name, 'tagged-pinned');

    // when the tag moves and GitLab delivers the tag push, then only the tag follower is woken
    await repo.commit({ 'app/cm.yaml': cm('tagged-repo', 'v1') });
    await repo.tag('v1.0.0', 'main');
    expect(await send(address, pushDelivery('gitlab', repo.url, secrets.gitlab, { ref: 'refs/tags/v1.0.0' }))).toEqual({
      status: 202,
      body: { result: 'accepted', woken: 1 },
    });
    await updated(value, 'v1');

    // and a branch push wakes neither
    expect(await send(address, pushDelivery('gitlab', repo.url, secrets.gitlab))).toEqual({ status: 202, body: { result: 'unfollowed', woken: 0 } });
  });

  it('wrong, missing or empty signatures get 401 and wake nothing', async () => {
    // given a new commit nobody has been told about
    const { repo, value } = await followedRepo('signed-repo');
    await repo.commit({ 'app/cm.yaml': cm('signed-repo', 'v1') });

    // when deliveries arrive with bad signatures, then each is refused
    for (const provider of Object.keys(secrets) as Provider[]) {
      const good = pushDelivery(provider, repo.url, secrets[provider]);
      const variants: Record<string, string>[] = [
        providerHeaders(provider, good.body, 'not-the-secret'),
        providerHeaders(provider, good.body, undefined),
        providerHeaders(provider, good.body, ''),
        // signed under another provider's secret
        providerHeaders(provider, good.body, secrets[provider === 'github' ? 'gitea' : 'github']),
      ];
      for (const headers of variants) {
        const answer = await send(address, { ...good, headers });
        expect(answer, `${provider} ${JSON.stringify(headers)}`).toEqual({ status: 401, body: { error: 'unauthorized' } });
      }
      // a body changed after signing (GitLab's token does not cover the body)
      if (provider === 'gitlab') continue;
      const tampered = Buffer.concat([good.body, Buffer.from(' ')]);
      expect((await send(address, { ...good, body: tampered })).status, `${provider} tampered`).toBe(401);
    }
    await sleep(1_000);

    // then nothing was woken
    expect(await value()).toBe('v0');
  });

  it('malformed JSON, nulls, missing fields and wrong types get 400, properly signed or not', async () => {
    const bodies = [
      '',
      '{',
      'null',
      '[]',
      '"push"',
      '{}',
      '{"ref":null,"repository":null}',
      '{"ref":7,"repository":{"clone_url":["x"]}}',
      '{"ref":"refs/heads/main","repository":{"clone_url":"not a url"}}',
    ];
    for (const provider of Object.keys(secrets) as Provider[]) {
      for (const text of bodies) {
        const body = Buffer.from(text);
        const answer = await send(address, { path: `/hooks/${provider}`, body, headers: providerHeaders(provider, body, secrets[provider]) });
        expect(answer.status, `${provider} ${text}`).toBe(400);
      }
    }
    // the receiver is still there
    expect((await send(address, pushDelivery('github', 'https://nobody.example/none.git', secrets.github))).status).toBe(202);
  });

  it('pings get 200, other events are ignored, unknown paths 404 and GETs 405', async () => {
    const ping = Buffer.from('{"zen":"Design for failure.","hook_id":1}');
    expect(await send(address, { path: '/hooks/github', body: ping, headers: providerHeaders('github', ping, secrets.github, { event: 'ping' }) })).toEqual({
      status: 200,
      body: { result: 'pong' },
    });
    const test = Buffer.from('{"test":true}');
    expect(
      (
        await send(address, {
          path: '/hooks/bitbucket',
          body: test,
          headers: providerHeaders('bitbucket', test, secrets.bitbucket, { event: 'diagnostics:ping', dataCenter: true }),
        })
      ).status,
    ).toBe(200);
    const issue = Buffer.from('{"action":"opened"}');
    expect(await send(address, { path: '/hooks/github', body: issue, headers: providerHeaders('github', issue, secrets.github, { event: 'issues' }) })).toEqual(
      { status: 200, body: { result: 'ignored' } },
    );
    expect((await send(address, { path: '/hooks/svn', body: ping, headers: {} })).status).toBe(404);
    expect((await send(address, { path: '/hooks/github', body: '', headers: {} }, 'GET')).status).toBe(405);
  });

  it('the same delivery twice at once wakes once; a redelivery asked for later (same id) is processed; an unfollowed repository gets 202 and nothing', async () => {
    const { repo, value } = await followedRepo('replay-repo');
    const delivery = pushDelivery('github', repo.url, secrets.github);
    expect((await send(address, delivery)).body).toEqual({ result: 'accepted', woken: 1 });
    // when the same delivery arrives again at once (a retry racing the first), then it is acknowledged and dropped
    expect(await send(address, delivery)).toEqual({ status: 200, body: { result: 'duplicate' } });
    expect(await send(address, pushDelivery('gitea', 'https://gitea.example.com/acme/unfollowed.git', secrets.gitea))).toEqual({
      status: 202,
      body: { result: 'unfollowed', woken: 0 },
    });

    // when a new commit lands and a person presses "Redeliver" on the old delivery (GitHub keeps its id) after the
    // receiver's few-second window, then it is processed: the branch is resolved afresh and the commit applied
    await repo.commit({ 'app/cm.yaml': cm('replay-repo', 'v1') });
    await sleep(6_000);
    expect(await send(address, delivery)).toEqual({ status: 202, body: { result: 'accepted', woken: 1 } });
    await updated(value, 'v1');
  });

  it('a body over the limit is refused while it streams, declared or not', async () => {
    // declared: refused from the headers alone
    const huge = Buffer.alloc(2 * 1024 * 1024, 0x20);
    expect(await send(address, { path: '/hooks/github', body: huge, headers: providerHeaders('github', huge, secrets.github) })).toMatchObject({ status: 413 });

    // chunked: the 413 arrives while the sender is still sending, long before it would have finished
    const [host, port] = address.split(':');
    const status = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host, port: Number(port) });
      let answer = '';
      let sent = 0;
      socket.on('data', (chunk: Buffer) => {
        answer += chunk.toString();
        if (answer.includes('\r\n')) resolve(answer.split('\r\n')[0] ?? '');
      });
      socket.on('error', () => undefined); // the receiver hangs up on us: expected
      socket.on('close', () => reject(new Error(`closed without an answer after ${sent} bytes`)));
      socket.write(
        `POST /hooks/generic HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nX-Syncline-Signature: sha256=${'0'.repeat(64)}\r\n\r\n`,
      );
      const chunk = Buffer.concat([Buffer.from(`${(64 * 1024).toString(16)}\r\n`), Buffer.alloc(64 * 1024, 0x20), Buffer.from('\r\n')]);
      const pump = (): void => {
        if (answer !== '' || socket.destroyed) return;
        // 64 MiB would take a while; the receiver must not wait for it
        if (sent >= 64 * 1024 * 1024) {
          reject(new Error('the whole oversized body was read'));
          return;
        }
        sent += 64 * 1024;
        if (socket.write(chunk)) setImmediate(pump);
        else socket.once('drain', pump);
      };
      pump();
    });
    expect(status).toBe('HTTP/1.1 413 Payload Too Large');
  });

  it('slow senders time out, in the headers or in the body', async () => {
    const [host, port] = address.split(':');
    const slow = (text: string): Promise<{ data: string; ms: number }> =>
      new Promise((resolve, reject) => {
        const started = Date.now();
        const socket = connect({ host, port: Number(port) }, () => socket.write(text));
        let data = '';
        socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
        socket.on('close', () => resolve({ data, ms: Date.now() - started }));
        socket.on('error', reject);
        socket.setTimeout(15_000, () => socket.destroy(new Error('the receiver never gave up on a slow sender')));
      });
    // The operator runs with --webhook-read-timeout 1 (checked every second); Node's default would be 10 s
    // (headers) or none (body). The bound only has to tell those apart, with room for a loaded machine.
    const configuredTimeoutBoundMs = 9_000;
    // the body: 10 of 100 declared bytes, then silence
    const body = await slow(`POST /hooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"ref":"re`);
    expect(body.data).toMatch(/^HTTP\/1\.1 408/);
    expect(body.ms).toBeLessThan(configuredTimeoutBoundMs);
    // the headers: never finished
    const headers = await slow(`POST /hooks/github HTTP/1.1\r\nHost: x\r\nX-GitHub-Ev`);
    expect(headers.ms).toBeLessThan(configuredTimeoutBoundMs);
  });

  it('a rotated secret is picked up; nothing secret or from a payload is logged', async () => {
    // when the Secret's github key is rotated, then deliveries signed with the new secret are accepted
    const secret = await core.readNamespacedSecret({ name: 'syncline-webhooks', namespace: ns.name });
    await core.replaceNamespacedSecret({
      name: 'syncline-webhooks',
      namespace: ns.name,
      body: { ...secret, data: { ...secret.data, github: Buffer.from('gh-rotated-2c4e6g').toString('base64') } },
    });
    const answer = await eventually(
      async () => {
        const a = await send(address, pushDelivery('github', 'https://github.com/acme/unfollowed.git', 'gh-rotated-2c4e6g'));
        return a.status === 202 ? a : undefined;
      },
      'the rotated secret',
      60_000,
    );
    expect(answer.body).toEqual({ result: 'unfollowed', woken: 0 });
    expect((await send(address, pushDelivery('github', 'https://github.com/acme/unfollowed.git', secrets.github))).status).toBe(401);

    // then the log names deliveries but holds no secret and no payload
    const logs = JSON.stringify(operator.logs);
    expect(logs).toContain('"msg":"webhook push"');
    for (const secret of [...Object.values(secrets), 'gh-rotated-2c4e6g']) expect(logs).not.toContain(secret);
    for (const payloadText of ['Update web replicas', 'octocat', 'jsmith', '"zen"']) expect(logs).not.toContain(payloadText);
    const metrics = await (await fetch(`http://${operator.probeAddress}/metrics`)).text();
    expect(metrics).toMatch(/syncline_webhook_deliveries_total\{provider="github",result="accepted"\} [1-9]/);
    expect(metrics).toMatch(/syncline_webhook_deliveries_total\{provider="gitlab",result="unauthorized"\} [1-9]/);
  });

  /**
   * When the receiver saw each push for `repoName`, and when it woke that repository's syncs, from its own log
   * lines since `firstLog` (its clock is ours: same machine). Wakes are logged before the syncs are woken.
   */
  function receiverTimes(repoName: string, firstLog: number): { arrivals: number[]; wakes: number[] } {
    const entries = operator.logs.slice(firstLog).filter((e) => typeof e['repo'] === 'string' && e['repo'].endsWith(`/${repoName}`));
    // Log times are RFC 3339 with milliseconds.
    const times = (msg: string): number[] => entries.filter((e) => e['msg'] === msg).map((e) => Date.parse(String(e['time'])));
    return { arrivals: times('webhook push'), wakes: times('webhook wake') };
  }

  /**
   * The most wakes `arrivals` allow by design (see coalescingWindows): counted with 10 ms less quiet and
   * ceiling than the receiver's 150 ms and 2 s, for log timestamps taken just after each push was held.
   */
  const allowedWakes = (arrivals: readonly number[]): number => coalescingWindows(arrivals, { quietMs: 140, maxWaitMs: 1_990 });

  it('50 deliveries within a second wake a sync at once and once more after, and it fetches once', async () => {
    // given a synced ConfigSync whose reconciles have settled, and a commit it has not been told about
    const { repo, value } = await followedRepo('delivery-burst-repo');
    await settled(() => git.requests('delivery-burst-repo').infoRefs, 1_500);
    await repo.commit({ 'app/cm.yaml': cm('delivery-burst-repo', 'v1') });
    git.resetRequests();
    const firstLog = operator.logs.length;

    // when 50 deliveries for it arrive within a second (sending is cheap, so a loaded machine spreads them little)
    const started = Date.now();
    const answers: Promise<unknown>[] = [];
    for (let i = 1; i <= 50; i++) {
      answers.push(send(address, pushDelivery('gitea', repo.url, secrets.gitea)));
      const due = started + (i * 1000) / 50;
      if (Date.now() < due) await sleep(due - Date.now());
    }
    await Promise.all(answers);
    await updated(value, 'v1');
    await sleep(1_000);

    // then the sync was woken at most as often as the measured arrivals allow: at the first delivery and once
    // after the burst, more only if the machine paused the deliveries for 150 ms or spread them over 2 s
    const { arrivals, wakes } = receiverTimes('delivery-burst-repo', firstLog);
    expect(arrivals).toHaveLength(50);
    const context = `50 pushes over ${Math.max(...arrivals) - Math.min(...arrivals)} ms, ${allowedWakes(arrivals)} window(s), ${wakes.length} wake(s)`;
    expect(wakes.length, context).toBeGreaterThanOrEqual(1);
    expect(wakes.length, context).toBeLessThanOrEqual(allowedWakes(arrivals));
    // and the one new commit was fetched once: the wakes after the first found it fetched
    expect(git.requests('delivery-burst-repo').uploadPack, context).toBe(1);
  });

  it('a burst of commits and pushes wakes a sync at its first push, then once per coalescing window, and each wake fetches at most once', async () => {
    // given a synced ConfigSync whose reconciles have settled (no resolve of its branch for 1.5 s), and its
    // repository's request counters at zero
    const { repo, value } = await followedRepo('burst-repo');
    await settled(() => git.requests('burst-repo').infoRefs, 1_500);
    git.resetRequests();
    const firstLog = operator.logs.length;

    // when 50 commits are pushed, each delivered by its own webhook, aiming at 50 in a second (a loaded
    // machine spreads them, committing is slow: the assertions below measure how, instead of assuming a second)
    const started = Date.now();
    const fetchesSeen: { at: number; fetches: number }[] = [];
    const answers: Promise<unknown>[] = [];
    for (let i = 1; i <= 50; i++) {
      await repo.commit({ 'app/cm.yaml': cm('burst-repo', `v${i}`) });
      fetchesSeen.push({ at: Date.now(), fetches: git.requests('burst-repo').uploadPack });
      answers.push(send(address, pushDelivery('gitea', repo.url, secrets.gitea)));
      const due = started + (i * 1000) / 50;
      if (Date.now() < due) await sleep(due - Date.now());
    }
    await Promise.all(answers);
    await updated(value, 'v50');
    await sleep(1_000);

    // then the sync was woken at most as often as the measured arrivals allow (at the first push and once after
    // 50 pushes inside 2 s that never pause for 150 ms; more when the machine spread them)
    const { arrivals, wakes } = receiverTimes('burst-repo', firstLog);
    expect(arrivals).toHaveLength(50);
    const windows = allowedWakes(arrivals);
    const spreadMs = Math.max(...arrivals) - Math.min(...arrivals);
    const context = `${arrivals.length} pushes over ${spreadMs} ms, ${windows} window(s), wakes at +${wakes.map((t) => t - started).join(', +')} ms`;
    expect(wakes.length, context).toBeGreaterThanOrEqual(1);
    expect(wakes.length, context).toBeLessThanOrEqual(windows);
    // the first push woke it at once: its wake is logged before the push's own line
    expect(Math.min(...wakes), context).toBeLessThanOrEqual(Math.min(...arrivals));
    // and the pushes after it were held, not chased: each wake cost at most one fetch (of the tip it found),
    // so a burst inside one window costs two, the first commit's and the last's
    const fetches = git.requests('burst-repo').uploadPack;
    expect(fetches, context).toBeGreaterThanOrEqual(1);
    expect(fetches, `${context}, ${fetchesSeen.at(-1)?.fetches ?? 0} fetch(es) while the pushes came`).toBeLessThanOrEqual(wakes.length);
  });
});
