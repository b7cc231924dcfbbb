// `syncline get -o jsonpath=… | custom-columns=…` proved against the real kubectl (v1.32 on PATH) on the same
// objects of the real control plane: each template prints byte-identical output and exits with the same code.
// No operator runs here, so nothing changes the objects between the two reads (status is written with kubectl).
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installCrds } from './harness.ts';

const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'packages', 'cli', 'bin', 'syncline.js');
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}` };

type Result = { code: number; stdout: string; stderr: string };

function run(file: string, args: readonly string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(file, [...args], { env, cwd: root, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

/** Templates a kubectl user writes, and the corners of kubectl's dialect. */
const TEMPLATES = [
  '{.items[*].metadata.name}',
  '{range .items[*]}{.metadata.name}{"\\t"}{.spec.targets[*].name}{"\\n"}{end}',
  '{range .items[*]}{range .spec.targets[*]}{.name}{","}{end}{"\\n"}{end}',
  '{.items[?(@.spec.suspend==true)].metadata.name}',
  '{.items[?(@.metadata.name=="web")].status.conditions[?(@.type=="Ready")].message}',
  "{.items[?(@.metadata.name=='web')].status.conditions[?(@.type=='Ready')].reason}",
  '{.items[?(@.spec.suspend)].metadata.name}',
  '{.items[?(@.status.observedGeneration>0)].metadata.name}',
  '{.items[?(@.status.observedGeneration!=3)].metadata.name}',
  '{.items[0].spec}',
  '{.items[*].metadata.labels}',
  '{.items[*].metadata.annotations}',
  '{.items[-1:].metadata.name}',
  '{.items[0:2:1].metadata.name}',
  '{.items[1:].metadata.name}',
  "{.items[*].metadata.annotations['note']}",
  "{.items[*]['kind', 'apiVersion']}",
  '{.items[0,1].kind}',
  '{.items[*].spec.targets[0].namespace}',
  'names: {.items[*].metadata.name} end',
  '{.items[*].status.observedGeneration}',
  '{.items[*].metadata.labels.app\\.kubernetes\\.io/name}',
  '{.kind}{.apiVersion}{.metadata}',
  '{..revision}',
  '{@.items[1].metadata.name}',
  '{$.kind}',
  '{.nope}{"x"}',
  '{}',
  '{.}',
  '{.items[0].metadata.managedFields[0].manager}',
  '{.items[*].status.conditions}',
  '{"tab\\there\\u00e9"}',
  // errors: kubectl and syncline both refuse them (exit 1)
  '{.items[5]}',
  '{.items[',
  '{.items[?(@.x=="a)]}',
  '{end}',
  '{.items[*].metadata.name',
  '{.items[?(@.spec.suspend==1)]}',
  '{.items[*]{',
];

const COLUMNS = [
  'NAME:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,TARGETS:.spec.targets[*].name,SOURCE:.spec.source,MISSING:.x',
  'NAME:{.metadata.name},MSG:status.conditions[0].message',
  'NAME:metadata.name,LABELS:.metadata.labels,GEN:.status.observedGeneration',
  // kubectl refuses it too (after printing the header: it parses column paths only once it prints rows)
  'A',
];

describe('get -o jsonpath / custom-columns, as kubectl prints them', () => {
  let ns: TestNamespace;
  let empty: TestNamespace;
  let dir: string;
  const kubeconfig = (): string => testKubeconfigPath();
  const kubectl = (args: readonly string[]): Promise<Result> => run('kubectl', [...args, '--kubeconfig', kubeconfig(), '--cache-dir', join(dir, 'kube-cache')]);
  const syncline = (args: readonly string[]): Promise<Result> => run(process.execPath, [bin, ...args, '--kubeconfig', kubeconfig()]);

  /** Both tools on the same arguments: the same bytes on stdout and the same exit code. */
  async function same(args: readonly string[]): Promise<Result> {
    const [theirs, ours] = await Promise.all([kubectl(args), syncline(args)]);
    expect({ args, stdout: ours.stdout, code: ours.code }).toEqual({ args, stdout: theirs.stdout, code: theirs.code });
    return ours;
  }

  beforeAll(async () => {
    await installCrds();
    [ns, empty] = await Promise.all([testNamespace({ prefix: 'jsonpath' }), testNamespace({ prefix: 'jsonpath-empty' })]);
    dir = await mkdtemp(join(tmpdir(), 'syncline-jsonpath-'));
    const manifest = join(dir, 'syncs.yaml');
    await writeFile(
      manifest,
      `apiVersion: syncline.dev/v1alpha1
kind: ConfigSync
metadata: {name: web, labels: {team: a, app.kubernetes.io/name: web}}
spec:
  source: {git: {repo: "https://git.example/web.git", revision: main, path: app}}
  targets: [{name: main, namespace: ${ns.name}}, {name: canary, namespace: ${ns.name}}]
---
apiVersion: syncline.dev/v1alpha1
kind: ConfigSync
metadata: {name: api, annotations: {note: "x<y>&z"}}
spec:
  source: {git: {repo: "https://git.example/api.git", revision: v1.2.0}}
  suspend: true
  targets: [{name: prod, namespace: ${ns.name}}]
`,
    );
    const applied = await kubectl(['apply', '-n', ns.name, '-f', manifest]);
    expect(applied.code, applied.stderr).toBe(0);
    const status = {
      status: {
        sourceRevision: '0123456789abcdef0123456789abcdef01234567',
        observedGeneration: 1,
        conditions: [
          { type: 'Ready', status: 'False', reason: 'RenderFailed', message: 'app/x.yaml:3: bad\ttab <&>', lastTransitionTime: '2026-11-27T18:00:00Z' },
          { type: 'Healthy', status: 'True', reason: 'Healthy', message: '1 object(s) healthy', lastTransitionTime: '2026-11-27T18:00:00Z' },
        ],
      },
    };
    const patched = await kubectl(['patch', 'csync', 'web', '-n', ns.name, '--subresource=status', '--type', 'merge', '-p', JSON.stringify(status)]);
    expect(patched.code, patched.stderr).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([ns[Symbol.asyncDispose](), empty[Symbol.asyncDispose]()]);
    await rm(dir, { recursive: true, force: true });
  });

  it('-o jsonpath=: every template prints what kubectl prints, on a list and on one object', async () => {
    for (const template of TEMPLATES) await same(['get', 'csync', '-n', ns.name, '-o', `jsonpath=${template}`]);
    await same(['get', 'csync', 'web', '-n', ns.name, '-o', 'jsonpath={.status.conditions[*].type}{"\\n"}{.spec.source.git}']);
    await same(['get', 'csync', '-n', empty.name, '-o', 'jsonpath={.items}']);
    await same(['get', 'csync', '-n', ns.name, '-o', 'jsonpath-as-json={.items[*].metadata.name}']);
    await same(['get', 'csync', '-n', ns.name, '-o', 'jsonpath-as-json={.items[0].spec.targets}']);
    // a readable template checked for real output, not only agreement
    const names = await same(['get', 'csync', '-n', ns.name, '-o', 'jsonpath={range .items[*]}{.metadata.name}{"\\n"}{end}']);
    expect(names.stdout).toBe('api\nweb\n');
  }, 300_000);

  it('-o jsonpath-file= and custom-columns-file= read the template from a file', async () => {
    const template = join(dir, 'template.txt');
    await writeFile(template, '{range .items[*]}{.metadata.name}={.spec.source.git.revision}{"\\n"}{end}');
    const ours = await same(['get', 'csync', '-n', ns.name, '-o', `jsonpath-file=${template}`]);
    expect(ours.stdout).toBe('api=v1.2.0\nweb=main\n');
    const columns = join(dir, 'columns.txt');
    await writeFile(columns, 'NAME          REVISION\n.metadata.name   .spec.source.git.revision\n');
    await same(['get', 'csync', '-n', ns.name, '-o', `custom-columns-file=${columns}`]);
  }, 120_000);

  it('-o custom-columns=: the same table, -A, --no-headers, one object, an empty namespace', async () => {
    for (const spec of COLUMNS) await same(['get', 'csync', '-n', ns.name, '-o', `custom-columns=${spec}`]);
    await same(['get', 'csync', '-n', ns.name, '--no-headers', '-o', `custom-columns=${COLUMNS[1] ?? ''}`]);
    // -A reads the whole shared control plane, where other tests create and delete syncs between the two reads:
    // compare until both tools read the same set (this file's rows must be in it)
    const everywhere = ['get', 'csync', '-A', '-o', 'custom-columns=NS:.metadata.namespace,NAME:.metadata.name,REV:.spec.source.git.revision'];
    for (let attempt = 1; ; attempt += 1) {
      const [theirs, ours] = await Promise.all([kubectl(everywhere), syncline(everywhere)]);
      if ((ours.stdout === theirs.stdout && ours.code === theirs.code) || attempt === 10) {
        expect({ stdout: ours.stdout, code: ours.code }).toEqual({ stdout: theirs.stdout, code: theirs.code });
        expect(ours.stdout).toMatch(new RegExp(`^${ns.name} +web +main$`, 'm'));
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await same(['get', 'csync', 'web', '-n', ns.name, '-o', 'custom-columns=NAME:.metadata.name,MSG:.status.conditions[0].message']);
    await same(['get', 'csync', '-n', empty.name, '-o', 'custom-columns=NAME:.metadata.name']);
    const table = await same(['get', 'csync', '-n', ns.name, '-o', 'custom-columns=NAME:.metadata.name,REV:.spec.source.git.revision']);
    expect(table.stdout).toBe('NAME   REV\napi    v1.2.0\nweb    main\n');
  }, 300_000);

  it('a template that does not parse or run is one error naming the template and the character', async () => {
    const parse = await syncline(['get', 'csync', '-n', ns.name, '-o', 'jsonpath={.items[*].metadata.name']);
    expect(parse.code).toBe(1);
    expect(parse.stderr).toContain('error parsing jsonpath {.items[*].metadata.name: unclosed action at character 24');
    const execute = await syncline(['get', 'csync', '-n', ns.name, '-o', 'jsonpath={.items[5]}']);
    expect(execute.code).toBe(1);
    expect(execute.stderr).toBe(
      'error: error executing jsonpath "{.items[5]}": array index out of bounds: index 5, length 2 at character 8: "{.items[" ← here\n',
    );
    const column = await syncline(['get', 'csync', '-n', ns.name, '-o', 'custom-columns=A:.x[']);
    expect(column.code).toBe(1);
    expect(column.stdout).toBe('');
    expect(column.stderr).toContain('column A: unterminated array at character 4');
  }, 120_000);

  it("`*` over an object: the same values as kubectl (whose order is Go's random map order)", async () => {
    const args = ['get', 'csync', '-n', ns.name, '-o', 'jsonpath={.items[1].spec.targets[0].*}'];
    const [theirs, ours] = await Promise.all([kubectl(args), syncline(args)]);
    expect(ours.stdout.split(' ').sort()).toEqual(theirs.stdout.split(' ').sort());
    expect(spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).stdout).toMatch(/v1\.3[2-9]/);
  }, 120_000);
});
