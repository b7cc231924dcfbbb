// The `syncline` CLI as users run it: the real executable (the package's bin) against the real control plane
// and a real operator. Help and --version, kubectl's flags and wording, KUBECONFIG=a:b, --context, -o,
// diff's unified output and exit codes, reconcile --wait.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { startGitServer, startOperator, type GitServer, type OperatorProcess, type TestRepo } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { applyConfigSync, configMapYaml, configSync, installCrds, waitForReady } from './harness.ts';

const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'packages', 'cli', 'bin', 'syncline.js');

/**
 * The executable under test. By default the package's bin with this Node. SYNCLINE_CLI=/path runs the same
 * cases against another executable, e.g. a release's standalone `syncline-V-linux-amd64`; SYNCLINE_CLI=standalone
 * builds this checkout's (scripts/release.ts; test/release/cli-standalone.int.test.ts runs it so). A standalone
 * executable runs with no Node on PATH: it must need none.
 */
const standalone = process.env['SYNCLINE_CLI'];
let executable: string | undefined;
const withoutNode = (path: string): string =>
  path
    .split(delimiter)
    .filter((dir) => dir !== '' && !existsSync(join(dir, 'node')))
    .join(delimiter);

type Result = { code: number; stdout: string; stderr: string };

/** Runs the real executable; async (not spawnSync): the Git server the CLI fetches from runs in this process. */
function syncline(args: readonly string[], options: { env?: NodeJS.ProcessEnv; file?: string } = {}): Promise<Result> {
  const nodeFirst = `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}`;
  const path = executable !== undefined && options.file === undefined ? withoutNode(process.env['PATH'] ?? '') : nodeFirst;
  const env = { ...process.env, PATH: path, ...options.env };
  const [file, argv] =
    options.file !== undefined ? [options.file, [...args]] : executable !== undefined ? [executable, [...args]] : [process.execPath, [bin, ...args]];
  return new Promise((resolve) => {
    execFile(file, argv, { env, cwd: root, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

const SUBCOMMANDS = [
  'run',
  'render',
  'diff',
  'get',
  'status',
  'clusters',
  'events',
  'reconcile',
  'suspend',
  'resume',
  'rollback',
  'trace',
  'check',
  'failover',
  'failback',
  'version',
  'completion',
  'dr',
  'confirm-prune',
];

describe('syncline CLI', () => {
  let git: GitServer;
  let ns: TestNamespace;
  let unwatched: TestNamespace;
  let empty: TestNamespace;
  let operator: OperatorProcess;
  let repo: TestRepo;
  let dir: string;
  const kubeconfig = (): string => testKubeconfigPath();

  const files = (value: string, password: string): Record<string, string> => ({
    'app/settings.yaml': configMapYaml('settings', `  v: "${value}"\n  same: "x"`),
    'app/db.yaml': `apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: ${password}\n  user: admin\n`,
  });

  beforeAll(async () => {
    if (standalone === 'standalone')
      executable = await (await import('../../scripts/release.ts')).ensureCli('amd64', (line) => console.log(`[release] ${line}`));
    else if (standalone !== undefined && standalone !== '') executable = standalone;
    await installCrds();
    git = await startGitServer();
    [ns, unwatched, empty] = await Promise.all([
      testNamespace({ prefix: 'cli' }),
      testNamespace({ prefix: 'cli-off' }),
      testNamespace({ prefix: 'cli-empty' }),
    ]);
    operator = await startOperator({ kubeconfig: kubeconfig(), args: ['--namespace', ns.name] });
    repo = await git.createRepo('cli');
    await repo.commit(files('1', 'hunter2-first'));
    await applyConfigSync(
      configSync(ns.name, 'web', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        refreshInterval: '1h',
        targets: [{ name: 'main', namespace: ns.name }],
      }),
    );
    dir = await mkdtemp(join(tmpdir(), 'syncline-cli-'));
    await waitForReady(ns.name, 'web', undefined, 60_000);
  }, 360_000);
  afterAll(async () => {
    await operator.stop();
    await Promise.all([ns[Symbol.asyncDispose](), unwatched[Symbol.asyncDispose](), empty[Symbol.asyncDispose]()]);
    await git.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe('conventions', () => {
    it("prints the version with --version, from the bin and through pnpm's shim (node_modules/.bin/syncline)", async () => {
      const { version } = JSON.parse(await readFile(join(root, 'packages', 'cli', 'package.json'), 'utf8')) as { version: string };
      const direct = await syncline(['--version']);
      expect(direct).toMatchObject({ code: 0, stderr: '' });
      expect(direct.stdout).toMatch(new RegExp(`^syncline ${version.replaceAll('.', '\\.')}( \\(commit [0-9a-f]{12}\\))?\\n$`));
      const shim = await syncline(['--version'], { file: join(root, 'node_modules', '.bin', 'syncline') });
      expect(shim).toEqual(direct);
      // a subcommand takes --version too
      expect((await syncline(['status', '--version'])).stdout).toBe(direct.stdout);
    });

    it.each(SUBCOMMANDS)('%s: -h and --help print its usage and exit 0', async (command) => {
      for (const flag of ['-h', '--help']) {
        const result = await syncline([command, flag]);
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
        expect(result.stdout).toMatch(new RegExp(`^Usage: syncline ${command} `));
        expect(result.stdout).toContain('-h, --help');
        // render and completion read no cluster; render still takes the namespace templates see.
        if (command !== 'render' && command !== 'completion')
          for (const kubeFlag of ['--context <name>', '--kubeconfig <file>']) expect(result.stdout).toContain(kubeFlag);
        if (command !== 'completion') expect(result.stdout).toContain('-n, --namespace <ns>');
      }
    });

    it('lists every command and the exit codes in syncline --help', async () => {
      const result = await syncline(['--help']);
      expect(result.code).toBe(0);
      for (const command of SUBCOMMANDS) expect(result.stdout).toMatch(new RegExp(`^ {2}${command} `, 'm'));
      expect(result.stdout).toMatch(/Exit codes:[\s\S]*diff: differences found/);
    });

    it('every syncline command README.md, examples/README.md and the guides in docs/ print names a real subcommand and flags it has', async () => {
      // Every guide in docs/ (api.md is generated from the schemas), and the chart's README.
      const guides = [
        ...(await readdir(join(root, 'docs'))).filter((f) => f.endsWith('.md') && f !== 'api.md').map((f) => `docs/${f}`),
        'charts/syncline/README.md',
      ];
      expect(guides).toEqual(
        expect.arrayContaining(['docs/install.md', 'docs/upgrade.md', 'docs/uninstall.md', 'docs/troubleshooting.md', 'docs/manifestsync.md']),
      );
      const texts = await Promise.all(['README.md', 'examples/README.md', ...guides].map((file) => readFile(join(root, file), 'utf8')));
      const commands = texts.flatMap((text) => [...text.matchAll(/(?<=^|`|\.\/pnpm exec )syncline ([a-z][^`\n]*)/gm)].map((m) => (m[1] ?? '').trim()));
      expect(commands.length).toBeGreaterThan(10);
      const helps = new Map<string, string>();
      for (const command of commands) {
        const [sub = '', ...rest] = command.split(/\s+/);
        if (!helps.has(sub)) {
          const help = await syncline([sub, '--help']);
          expect(help.code, `syncline ${sub} --help (from "${command}")`).toBe(0);
          helps.set(sub, help.stdout);
        }
        for (const flag of rest.filter((token) => /^--?[a-zA-Z]/.test(token)).map((token) => token.replace(/=.*$/, ''))) {
          expect(helps.get(sub), `"syncline ${command}": ${flag}`).toMatch(new RegExp(`(^|[ ,])${flag}[ ,<\\n]`, 'm'));
        }
      }
    });

    it("README's command table has a row for every subcommand syncline --help lists, and no row for one it does not", async () => {
      const help = await syncline(['--help']);
      const listed = [...help.stdout.matchAll(/^ {2}([a-z][a-z-]*) /gm)].map((m) => m[1] ?? '').filter((c) => c !== 'help');
      expect(listed).toEqual(expect.arrayContaining(SUBCOMMANDS));
      const readme = await readFile(join(root, 'README.md'), 'utf8');
      const table = readme.slice(readme.indexOf('## The `syncline` command'), readme.indexOf('## Concepts'));
      const rows = [...table.matchAll(/^\| `([a-z][a-z-]*)/gm)].map((m) => m[1] ?? '');
      // a row may start with another command of the same line (`failover --standby`, `dr status`)
      const named = new Set([...rows, ...[...table.matchAll(/^\|[^|]*`([a-z][a-z-]*) [^`]*`[^|]*\|/gm)].map((m) => m[1] ?? '')]);
      expect(listed.filter((command) => !named.has(command))).toEqual([]);
      expect(rows.filter((command) => !listed.includes(command))).toEqual([]);
    });

    it('refuses an unknown flag by name, exit 1 (diff: 2), and suggests a close one', async () => {
      const status = await syncline(['status', '--bogus']);
      expect(status.code).toBe(1);
      expect(status.stderr).toMatch(/^error: unknown option '--bogus'/);
      const typo = await syncline(['status', '--namespaec', 'x']);
      expect(typo.stderr).toMatch(/Did you mean --namespace\?/);
      expect((await syncline(['diff', 'web', '--bogus'])).code).toBe(2);
      const output = await syncline(['status', '-o', 'xml', '--kubeconfig', kubeconfig()]);
      expect(output.code).toBe(1);
      expect(output.stderr).toMatch(/Allowed choices are table, json, yaml/);
    });
  });

  describe('listing', () => {
    it('says "No resources found in NS namespace." on stderr for an empty list (table); -o json gives an empty List', async () => {
      for (const command of ['status', 'clusters']) {
        const table = await syncline([command, '-n', empty.name, '--kubeconfig', kubeconfig()]);
        expect(table).toEqual({ code: 0, stdout: '', stderr: `No resources found in ${empty.name} namespace.\n` });
        const json = await syncline([command, '-n', empty.name, '-o', 'json', '--kubeconfig', kubeconfig()]);
        expect(json.code).toBe(0);
        expect(JSON.parse(json.stdout)).toMatchObject({ apiVersion: 'v1', kind: 'List', items: [] });
      }
    });

    it('prints a table by default, the object with -o json|yaml (no managedFields), and every namespace with -A', async () => {
      const table = await syncline(['status', '-n', ns.name, '--kubeconfig', kubeconfig()]);
      expect(table.code).toBe(0);
      expect(table.stdout).toMatch(new RegExp(`^${ns.name}\\s+web\\s+True\\s+\\S+\\s+[0-9a-f]{12}\\s+1/1`, 'm'));

      const json = await syncline(['status', 'web', '-n', ns.name, '-o', 'json', '--kubeconfig', kubeconfig()]);
      const object = JSON.parse(json.stdout) as { kind: string; metadata: Record<string, unknown>; status: { sourceRevision: string } };
      expect(object).toMatchObject({ kind: 'ConfigSync', metadata: { name: 'web', namespace: ns.name } });
      expect(object.metadata['managedFields']).toBeUndefined();

      const yaml = await syncline(['status', '-n', ns.name, '-o', 'yaml', '--kubeconfig', kubeconfig()]);
      expect(parse(yaml.stdout)).toMatchObject({
        kind: 'List',
        items: [{ metadata: { name: 'web' }, status: { sourceRevision: object.status.sourceRevision } }],
      });

      const all = await syncline(['status', '-A', '--kubeconfig', kubeconfig()]);
      expect(all.code).toBe(0);
      expect(all.stdout).toMatch(new RegExp(`^${ns.name}\\s+web\\s+True`, 'm'));
      expect(all.stdout).toMatch(/^NAMESPACE\s+NAME\s+READY/);
    });

    it('reports a missing object as kubectl does: no REST path, no HTTP details, exit 1', async () => {
      const result = await syncline(['status', 'nope', '-n', ns.name, '--kubeconfig', kubeconfig()]);
      expect(result).toEqual({ code: 1, stdout: '', stderr: 'Error from server (NotFound): configsyncs.syncline.dev "nope" not found\n' });
    });
  });

  describe('kubeconfig', () => {
    let config: {
      clusters: { name: string; cluster: Record<string, unknown> }[];
      users: { name: string }[];
      contexts: { name: string; context: Record<string, unknown> }[];
      'current-context'?: string;
    };
    beforeAll(async () => {
      config = parse(await readFile(kubeconfig(), 'utf8')) as typeof config;
    });

    it('merges KUBECONFIG=a:b as kubectl does: the first file wins for a name and for current-context', async () => {
      const admin = config.contexts.find((c) => c.name === 'admin');
      expect(admin).toBeDefined();
      // a: the contexts and the current context; b: clusters and users, plus a context "admin" that points
      // nowhere and another current-context, both of which a must override.
      const a = join(dir, 'a.yaml');
      const b = join(dir, 'b.yaml');
      await writeFile(a, stringify({ apiVersion: 'v1', kind: 'Config', contexts: config.contexts, 'current-context': 'admin' }));
      await writeFile(
        b,
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [...config.clusters, { name: 'nowhere', cluster: { server: 'https://127.0.0.1:1' } }],
          users: config.users,
          contexts: [{ name: 'admin', context: { cluster: 'nowhere', user: 'admin' } }],
          'current-context': 'restricted',
        }),
      );
      const missing = join(dir, 'does-not-exist.yaml');
      const result = await syncline(['status', 'web', '-n', ns.name], { env: { KUBECONFIG: [a, missing, b].join(delimiter) } });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^\S+\s+web\s+True/m);
    });

    it('uses --context over current-context, and says when the server cannot be reached (no REST path)', async () => {
      const broken = join(dir, 'broken.yaml');
      await writeFile(
        broken,
        stringify({
          ...config,
          clusters: [...config.clusters, { name: 'nowhere', cluster: { server: 'https://127.0.0.1:1' } }],
          contexts: [...config.contexts, { name: 'broken', context: { cluster: 'nowhere', user: 'admin' } }],
          'current-context': 'broken',
        }),
      );
      const unreachable = await syncline(['status', '-n', ns.name, '--kubeconfig', broken]);
      expect(unreachable.code).toBe(1);
      expect(unreachable.stderr).toMatch(/^Unable to connect to the server: .*ECONNREFUSED/);
      expect(unreachable.stderr).not.toContain('/apis/');
      const chosen = await syncline(['status', '-n', ns.name, '--kubeconfig', broken, '--context', 'admin']);
      expect(chosen.code).toBe(0);
      expect(chosen.stdout).toMatch(/\bweb\s+True/);
      const unknown = await syncline(['status', '--kubeconfig', broken, '--context', 'nope']);
      expect(unknown).toMatchObject({ code: 1, stderr: 'error: context "nope" does not exist\n' });
    });
  });

  describe('diff and reconcile', () => {
    it('diff: exit 0 and no diff when live equals Git; 1 with a field-level unified diff (Secret values masked); reconcile --wait applies it and prints the revision', async () => {
      const args = ['-n', ns.name, '--kubeconfig', kubeconfig(), '--allow-insecure-http'];
      const same = await syncline(['diff', 'web', ...args]);
      expect(same.stderr).toBe('');
      expect(same.code).toBe(0);
      expect(same.stdout).not.toMatch(/^(---|\+\+\+) /m);
      expect(same.stdout).toMatch(/^# 0 object\(s\) differ$/m);

      const sha = await repo.commit(files('2', 'hunter2-second'));
      const changed = await syncline(['diff', 'web', ...args]);
      expect(changed.stderr).toBe('');
      expect(changed.code).toBe(1);
      expect(changed.stdout).toContain(`--- live/core/ConfigMap/${ns.name}/settings\n+++ desired/core/ConfigMap/${ns.name}/settings\n`);
      expect(changed.stdout).toMatch(/^- {2}v: "1"\n\+ {2}v: "2"$/m);
      // unchanged fields are context, not changes; server-populated fields are not shown
      expect(changed.stdout).toMatch(/^ {3}same: x$/m);
      expect(changed.stdout).not.toMatch(/uid|resourceVersion|managedFields|creationTimestamp/);
      expect(changed.stdout).toContain(`--- live/core/Secret/${ns.name}/db\n`);
      expect(changed.stdout).toMatch(/^- {2}password: "\*\*\*"\n\+ {2}password: "\*\*\* \(changed\)"$/m);
      for (const secret of ['hunter2-first', 'hunter2-second', 'admin']) {
        expect(changed.stdout).not.toContain(secret);
        expect(changed.stdout).not.toContain(Buffer.from(secret).toString('base64'));
      }
      expect(changed.stdout).toMatch(/^# 2 object\(s\) differ$/m);

      const reconciled = await syncline(['reconcile', 'web', '--wait', '--timeout', '90s', '-n', ns.name, '--kubeconfig', kubeconfig()]);
      expect(reconciled.stderr).toBe('');
      expect(reconciled.code).toBe(0);
      expect(reconciled.stdout).toMatch(new RegExp(`^applied revision main@sha1:${sha}$`, 'm'));

      const after = await syncline(['diff', 'web', ...args]);
      expect(after.code).toBe(0);
      expect(after.stdout).not.toMatch(/^(---|\+\+\+) /m);
    });

    it('diff shows an object a sync would create against /dev/null, and one it would prune the other way round (Secret still masked)', async () => {
      await repo.commit({ 'app/extra.yaml': configMapYaml('extra', '  new: "yes"'), 'app/db.yaml': null });
      const result = await syncline(['diff', 'web', '-n', ns.name, '--kubeconfig', kubeconfig(), '--allow-insecure-http']);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(1);
      expect(result.stdout).toContain(`--- /dev/null\n+++ desired/core/ConfigMap/${ns.name}/extra\n@@ -0,0 +1,`);
      expect(result.stdout).toMatch(/^\+ {2}new: yes$/m);
      expect(result.stdout).toContain(`# core/Secret/${ns.name}/db: pruned\n--- live/core/Secret/${ns.name}/db\n+++ /dev/null\n`);
      expect(result.stdout).toMatch(/^- {2}password: "\*\*\*"$/m);
      expect(result.stdout).not.toContain('hunter2-second');
      expect(result.stdout).not.toContain(Buffer.from('hunter2-second').toString('base64'));
      expect(result.stdout).toMatch(/^# 2 object\(s\) differ$/m);
    });

    it("diff exits 2 on an error, with kubectl's wording", async () => {
      const result = await syncline(['diff', 'nope', '-n', ns.name, '--kubeconfig', kubeconfig()]);
      expect(result).toEqual({ code: 2, stdout: '', stderr: 'Error from server (NotFound): configsyncs.syncline.dev "nope" not found\n' });
    });

    it('reconcile --wait: exit 1 with the Ready message when the sync fails, and with a clear message on timeout', async () => {
      const broken = await git.createRepo('cli-broken');
      await broken.commit({ 'app/a.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: [not, a, map\n' });
      await applyConfigSync(
        configSync(ns.name, 'broken', {
          source: { git: { repo: broken.url, revision: 'main', path: 'app' } },
          refreshInterval: '1h',
          targets: [{ name: 'main', namespace: ns.name }],
        }),
      );
      const failed = await syncline(['reconcile', 'broken', '--wait', '--timeout', '90s', '-n', ns.name, '--kubeconfig', kubeconfig()]);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(new RegExp(`^error: ${ns.name}/broken is not ready \\(\\w+\\): .+`));

      // no operator watches this namespace: nothing handles the request
      await applyConfigSync(
        configSync(unwatched.name, 'idle', {
          source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
          refreshInterval: '1h',
          targets: [{ name: 'main' }],
        }),
      );
      const timedOut = await syncline(['reconcile', 'idle', '--wait', '--timeout', '2s', '-n', unwatched.name, '--kubeconfig', kubeconfig()]);
      expect(timedOut.code).toBe(1);
      expect(timedOut.stderr).toMatch(new RegExp(`^error: timed out after 2s waiting for ${unwatched.name}/idle to handle the request`));
    });
  });
});
