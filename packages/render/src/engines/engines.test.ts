// Syncline's render process against the official CLIs built from the same Go modules: for each corpus entry
// (Kustomize overlays with components, generators, replacements and every kind of patch; a Helm chart with a
// vendored dependency, CRDs, helpers and hooks; the project's own chart with several value sets; Jsonnet with
// library paths, ext vars and top-level arguments), the objects rendered in memory equal the CLI's output,
// object for object and in the same order.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ensureHelm, ensureJsonnet, ensureKustomize, ensureRenderEngine } from '@syncline/test-support';
import { EngineName, RenderEngine, type EngineFile } from './process.ts';

const testdata = join(import.meta.dirname, 'testdata');
const repoRoot = join(import.meta.dirname, '..', '..', '..', '..');
const progress = (line: string): void => console.log(`[engines] ${line}`);

/** Every file under `dir` as repo-relative paths under `prefix`. */
export function readTree(dir: string, prefix = ''): EngineFile[] {
  const out: EngineFile[] = [];
  const walk = (current: string): void => {
    for (const name of readdirSync(current).sort()) {
      const full = join(current, name);
      if (statSync(full).isDirectory()) walk(full);
      else out.push({ path: `${prefix}${relative(dir, full).split('\\').join('/')}`, content: readFileSync(full) });
    }
  };
  walk(dir);
  return out;
}

function run(binary: string, args: readonly string[], options: { cwd?: string; home: string }): string {
  const result = spawnSync(binary, [...args], {
    cwd: options.cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: options.home,
      HELM_CACHE_HOME: join(options.home, 'c'),
      HELM_CONFIG_HOME: join(options.home, 'f'),
      HELM_DATA_HOME: join(options.home, 'd'),
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`${binary} ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout;
}

function yamlObjects(text: string): unknown[] {
  return parseAllDocuments(text)
    .map((document) => document.toJS({ maxAliasCount: -1 }) as unknown)
    .filter((object) => object !== null && object !== undefined);
}

let engine: RenderEngine;
let kustomize: string;
let helm: string;
let jsonnet: string;
let home: string;

beforeAll(async () => {
  // One at a time: each is a Go build on a cold machine.
  engine = new RenderEngine({ binary: await ensureRenderEngine({ onProgress: progress }) });
  kustomize = await ensureKustomize({ onProgress: progress });
  jsonnet = await ensureJsonnet({ onProgress: progress });
  helm = await ensureHelm({ onProgress: progress });
  home = mkdtempSync(join(tmpdir(), 'syncline-engines-'));
}, 1_800_000);

afterAll(() => {
  engine?.close();
  if (home !== undefined) rmSync(home, { recursive: true, force: true });
});

const renderObjects = async (engineName: EngineName, files: readonly EngineFile[], input: Record<string, unknown>): Promise<unknown[]> =>
  (await engine.render({ engine: engineName, files, input })).map((o) => o.object);

describe('kustomize: objects equal `kustomize build`', () => {
  const files = (): EngineFile[] => readTree(join(testdata, 'kustomize'));

  it.each(['base', 'overlays/dev', 'overlays/prod'])('%s', async (path) => {
    const expected = yamlObjects(run(kustomize, ['build', join(testdata, 'kustomize', path)], { home }));
    expect(expected.length).toBeGreaterThan(3);
    expect(await renderObjects(EngineName.Kustomize, files(), { path })).toEqual(expected);
  });

  it('the Flux fields (namespace, prefix, suffix, images, patches, components, commonMetadata) equal the same kustomization edited by hand', async () => {
    const fields = {
      namespace: 'team-a',
      namePrefix: 'a-',
      nameSuffix: '-v2',
      images: [{ name: 'nginx', newTag: '1.28' }],
      patches: [
        { patch: 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 7\n' },
        { target: { kind: 'Service' }, patch: '- op: add\n  path: /metadata/labels/exposed\n  value: "yes"\n' },
      ],
      components: ['../../components/monitoring'],
    };
    // The same change written into a copy of the overlay, for the CLI.
    const copy = mkdtempSync(join(tmpdir(), 'syncline-kustomize-'));
    try {
      cpSync(join(testdata, 'kustomize'), copy, { recursive: true });
      const path = join(copy, 'overlays', 'dev', 'kustomization.yaml');
      const original = readFileSync(path, 'utf8');
      writeFileSync(
        path,
        original
          .replace('namespace: web-dev', 'namespace: team-a')
          .replace(
            'namePrefix: dev-',
            'namePrefix: a-\nnameSuffix: -v2\ncomponents:\n  - ../../components/monitoring\nlabels:\n  - pairs:\n      owner: team-a\ncommonAnnotations:\n  contact: a@example.com',
          )
          .replace('    newTag: 1.27-alpine', '    newTag: 1.27-alpine\n  - name: nginx\n    newTag: "1.28"')
          .replace(
            '  - path: replicas.yaml',
            '  - path: replicas.yaml\n  - patch: |-\n      apiVersion: apps/v1\n      kind: Deployment\n      metadata:\n        name: web\n      spec:\n        replicas: 7\n  - target:\n      kind: Service\n    patch: |-\n      - op: add\n        path: /metadata/labels/exposed\n        value: "yes"',
          ),
      );
      const expected = yamlObjects(run(kustomize, ['build', join(copy, 'overlays', 'dev')], { home }));
      const actual = await renderObjects(EngineName.Kustomize, files(), {
        path: 'overlays/dev',
        ...fields,
        labels: { owner: 'team-a' },
        annotations: { contact: 'a@example.com' },
      });
      expect(actual).toEqual(expected);
      expect(JSON.stringify(actual)).toContain('"replicas":7');
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('a directory without a kustomization builds what it holds, as Flux generates one', async () => {
    const plain = [
      { path: 'apps/cm.yaml', content: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n' },
      { path: 'apps/sub/cm.yaml', content: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n' },
    ];
    const objects = (await renderObjects(EngineName.Kustomize, plain, { path: 'apps', namespace: 'x' })) as { metadata: { name: string; namespace: string } }[];
    expect(objects.map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual(['x/a', 'x/b']);
  });
});

describe('helm: objects equal `helm template`', () => {
  const webFiles = (): EngineFile[] => readTree(join(testdata, 'helm'));

  it.each([
    ['default values', [] as string[], {}],
    [
      'production values',
      ['-f', join(testdata, 'helm', 'web', 'values-prod.yaml')],
      yamlObjects(readFileSync(join(testdata, 'helm', 'web', 'values-prod.yaml'), 'utf8'))[0],
    ],
    ['the dependency disabled', ['--set', 'cache.enabled=false'], { cache: { enabled: false } }],
  ])('a chart with a dependency, CRDs, helpers and hooks: %s', async (_name, args, values) => {
    const expected = yamlObjects(
      run(
        helm,
        [
          'template',
          'shop',
          join(testdata, 'helm', 'web'),
          '--namespace',
          'store',
          '--include-crds',
          '--skip-tests',
          '--kube-version',
          '1.31.2',
          '--api-versions',
          'monitoring.coreos.com/v1',
          ...args,
        ],
        { home },
      ),
    );
    const actual = await renderObjects(EngineName.Helm, webFiles(), {
      chart: 'web',
      releaseName: 'shop',
      namespace: 'store',
      values,
      includeCRDs: true,
      skipTests: true,
      kubeVersion: '1.31.2',
      apiVersions: ['monitoring.coreos.com/v1'],
    });
    expect(actual).toEqual(expected);
    expect(JSON.stringify(actual)).toContain('"value":"v1.31.2"');
    expect(JSON.stringify(actual)).not.toContain('ignored by .helmignore');
  });

  it('test hooks are kept when skipTests is off, as helm template prints them', async () => {
    const expected = yamlObjects(run(helm, ['template', 'shop', join(testdata, 'helm', 'web'), '--namespace', 'store'], { home }));
    const actual = await renderObjects(EngineName.Helm, webFiles(), {
      chart: 'web',
      releaseName: 'shop',
      namespace: 'store',
      includeCRDs: false,
      skipTests: false,
    });
    expect(actual).toEqual(expected);
    expect(JSON.stringify(actual)).toContain('shop-web-test');
  });

  const syncline = (): EngineFile[] => readTree(join(repoRoot, 'charts', 'syncline'), 'charts/syncline/');
  it.each([
    ['default values', {}],
    ['namespace-scoped RBAC', { rbac: { scope: 'namespace' }, shards: ['a', 'b'] }],
    [
      'UI, network policy and metrics',
      {
        ui: { enabled: true },
        networkPolicy: { enabled: true },
        metrics: { prometheusRule: { enabled: true }, dashboard: { enabled: true } },
        replicaCount: 3,
      },
    ],
  ])("the project's own chart (charts/syncline): %s", async (_name, values) => {
    const valuesFile = join(home, 'values.json');
    writeFileSync(valuesFile, JSON.stringify(values));
    const expected = yamlObjects(
      run(helm, ['template', 'syncline', join(repoRoot, 'charts', 'syncline'), '--namespace', 'syncline-system', '--include-crds', '-f', valuesFile], { home }),
    );
    const actual = await renderObjects(EngineName.Helm, syncline(), {
      chart: 'charts/syncline',
      releaseName: 'syncline',
      namespace: 'syncline-system',
      values,
      includeCRDs: true,
      skipTests: true,
    });
    expect(actual.length).toBeGreaterThan(10);
    expect(actual).toEqual(expected);
  });
});

describe('jsonnet: objects equal the `jsonnet` CLI', () => {
  it.each([
    ['dev', { env: 'dev' }, {}],
    ['prod with top-level arguments', { env: 'prod' }, { tier: 'api' }],
  ])('%s', async (_name, extVars, tlas) => {
    const args = [
      '-J',
      'vendor',
      ...Object.entries(extVars).flatMap(([k, v]) => ['-V', `${k}=${v}`]),
      ...Object.entries(tlas).flatMap(([k, v]) => ['-A', `${k}=${v}`]),
      'main.jsonnet',
    ];
    const output = JSON.parse(run(jsonnet, args, { cwd: join(testdata, 'jsonnet'), home })) as { deployment: unknown; config: unknown; extra: unknown[] };
    // Objects nested in the output are collected in key order (config, deployment, extra[...]).
    const expected = [output.config, output.deployment, ...output.extra];
    const actual = await renderObjects(EngineName.Jsonnet, readTree(join(testdata, 'jsonnet'), 'jsonnet/'), {
      main: 'jsonnet/main.jsonnet',
      libraryPaths: ['jsonnet/vendor'],
      extVars,
      tlas,
    });
    expect(actual).toEqual(expected);
    expect(actual).toHaveLength(5);
  });
});
