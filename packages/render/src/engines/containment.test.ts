// A render reads only the snapshot it is given, fetches nothing, runs nothing, and is stopped at its limits
// while the process keeps serving: the cases Argo CD's advisories for Helm and Kustomize are made of (paths
// out of the repository, remote bases, exec functions, schema references), plus lookups, alias bombs, loops
// and floods. Each is a real render by the real process.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureRenderEngine } from '@syncline/test-support';
import { createStaticDiscovery } from '../discovery.ts';
import { RenderError, RenderErrorReason } from '../errors.ts';
import { EngineFailureKind, EngineName, RenderEngine, type EngineFile } from './process.ts';
import { EngineRenderCache, renderWithEngine, type EngineSpec } from './render.ts';

let binary: string;
let engine: RenderEngine;
let server: Server;
let requests = 0;
let base = '';

beforeAll(async () => {
  binary = await ensureRenderEngine({ onProgress: (line) => console.log(`[engines] ${line}`) });
  engine = new RenderEngine({ binary });
  server = createServer((_req, res) => {
    requests++;
    res.end('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 1_800_000);

afterAll(async () => {
  engine?.close();
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
});

const cm = (name: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  a: b\n`;
const files = (entries: Record<string, string>): EngineFile[] => Object.entries(entries).map(([path, content]) => ({ path, content }));

async function failure(spec: EngineSpec, entries: Record<string, string>, path: string, limits = {}): Promise<RenderError> {
  try {
    await renderWithEngine({
      engine,
      spec,
      files: files(entries),
      path,
      target: { name: 't', namespace: 'ns' },
      source: { repo: 'https://git.example.com/r.git', revision: 'a'.repeat(40) },
      discovery: createStaticDiscovery(),
      releaseName: 'r',
      limits,
    });
  } catch (error) {
    if (error instanceof RenderError) return error;
    throw error;
  }
  throw new Error('the render succeeded');
}

const kustomize: EngineSpec = { engine: EngineName.Kustomize, options: {} };
const helm: EngineSpec = { engine: EngineName.Helm, options: {} };
const kustomization = (body: string): string => `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n${body}`;
const chart = (templates: Record<string, string>, extra: Record<string, string> = {}): Record<string, string> => ({
  'chart/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
  ...Object.fromEntries(Object.entries(templates).map(([name, body]) => [`chart/templates/${name}`, body])),
  ...extra,
});

describe('a render reads only the snapshot', () => {
  it('a base above the repository root finds nothing there', async () => {
    const error = await failure(kustomize, { 'app/kustomization.yaml': kustomization('resources:\n  - ../../../../etc\n') }, 'app');
    expect(error.reason).toBe(RenderErrorReason.EngineFailed);
    expect(error.message).toMatch(/^kustomize: /);
  });

  it('an absolute path names nothing on the disk', async () => {
    const error = await failure(kustomize, { 'app/kustomization.yaml': kustomization('resources:\n  - /etc/passwd\n') }, 'app');
    expect(error.message).toMatch(/^kustomize: /);
    expect(error.message).not.toContain('root:x:0');
  });

  it('a file outside the kustomization root is refused by the root-only load restrictor', async () => {
    const error = await failure(
      kustomize,
      { 'app/kustomization.yaml': kustomization('configMapGenerator:\n  - name: x\n    files:\n      - ../secret.txt\n'), 'secret.txt': 'top secret' },
      'app',
    );
    expect(error.message).toContain('security');
    expect(error.message).not.toContain('top secret');
  });

  it('a Helm values schema that points at a file or URL is refused before Helm reads it', async () => {
    for (const ref of ['file:///etc/passwd', `${base}/schema.json`]) {
      const error = await failure(
        helm,
        chart(
          { 'cm.yaml': cm('x') },
          { 'chart/values.schema.json': JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', properties: { a: { $ref: ref } } }) },
        ),
        'chart',
      );
      expect(error.reason).toBe(RenderErrorReason.EngineRefused);
      expect(error.message).toContain(ref);
    }
    expect(requests).toBe(0);
  });

  it('Jsonnet imports resolve in the repository only', async () => {
    const spec: EngineSpec = { engine: EngineName.Jsonnet, options: {} };
    const absolute = await failure(spec, { 'j/main.jsonnet': "import '/etc/passwd'" }, 'j/main.jsonnet');
    expect(absolute.reason).toBe(RenderErrorReason.EngineRefused);
    const above = await failure(spec, { 'j/main.jsonnet': "importstr '../../../etc/passwd'" }, 'j/main.jsonnet');
    expect(above.message).toMatch(/^jsonnet: /);
    expect(above.message).not.toContain('root:x:0');
  });
});

describe('a render fetches nothing and runs nothing', () => {
  it('a remote Git base is refused before Kustomize reads it, naming the kustomization file and the entry', async () => {
    const remotes = [
      'https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v3.3.1',
      'github.com/kubernetes-sigs/kustomize/examples/helloWorld?ref=v3.3.1',
      'git@github.com:org/repo.git//base',
      'ssh://git@git.example.com/org/repo.git//base?ref=main',
      'git::https://git.example.com/org/repo//base',
      'git.example.com/org/repo/base',
      // a repository on the render process's own disk
      'file:///srv/git/configs.git//base?ref=main',
    ];
    for (const remote of remotes) {
      const error = await failure(
        kustomize,
        { 'app/kustomization.yaml': kustomization(`resources:\n  - cm.yaml\n  - ${remote}\n`), 'app/cm.yaml': cm('a') },
        'app',
      );
      expect(error.reason).toBe(RenderErrorReason.EngineRefused);
      expect(error.message).toBe(
        `kustomize: app/kustomization.yaml: resources entry ${JSON.stringify(remote)} is a remote base or resource, and remote bases are not fetched: a render reads only the repository (vendor it into the repository)`,
      );
    }
  });

  it('a remote base deep in a local base, a remote component and a legacy bases entry are refused too', async () => {
    const nested = await failure(
      kustomize,
      {
        'overlays/prod/kustomization.yaml': kustomization('resources:\n  - ../../base\n'),
        'base/kustomization.yaml': kustomization('resources:\n  - cm.yaml\n  - https://git.example.com/org/shared.git//common?ref=v1\n'),
        'base/cm.yaml': cm('a'),
      },
      'overlays/prod',
    );
    expect(nested.reason).toBe(RenderErrorReason.EngineRefused);
    expect(nested.message).toContain('base/kustomization.yaml: resources entry "https://git.example.com/org/shared.git//common?ref=v1" is a remote base');
    const component = await failure(
      kustomize,
      { 'app/kustomization.yaml': kustomization('components:\n  - github.com/org/repo//components/x?ref=v2\n') },
      'app',
    );
    expect(component.message).toContain('app/kustomization.yaml: components entry "github.com/org/repo//components/x?ref=v2" is a remote base');
    const legacy = await failure(kustomize, { 'app/kustomization.yaml': kustomization('bases:\n  - github.com/org/repo//base?ref=v1\n') }, 'app');
    expect(legacy.message).toContain('app/kustomization.yaml: resources entry "github.com/org/repo//base?ref=v1" is a remote base');
  });

  it('local entries that only look like hosts or URLs are read from the repository', async () => {
    const objects = await renderWithEngine({
      engine,
      spec: kustomize,
      files: files({
        'app/kustomization.yaml': kustomization('resources:\n  - example.com/cm.yaml\n  - conf.d\n'),
        'app/example.com/cm.yaml': cm('hosted'),
        'app/conf.d/kustomization.yaml': kustomization('resources:\n  - cm.yaml\n'),
        'app/conf.d/cm.yaml': cm('confd'),
      }),
      path: 'app',
      target: { name: 't', namespace: 'ns' },
      source: { repo: 'https://git.example.com/r.git', revision: 'a'.repeat(40) },
      discovery: createStaticDiscovery(),
      releaseName: 'r',
    });
    expect(objects.map((o) => o.metadata.name).sort()).toEqual(['confd', 'hosted']);
  });

  it('a remote resource over HTTP is refused and no request leaves the process', async () => {
    const error = await failure(kustomize, { 'app/kustomization.yaml': kustomization(`resources:\n  - ${base}/cm.yaml\n`) }, 'app');
    expect(error.reason).toBe(RenderErrorReason.EngineRefused);
    expect(error.message).toContain(`app/kustomization.yaml: resources entry "${base}/cm.yaml" is a remote base or resource`);
    expect(requests).toBe(0);
  });

  it('an exec KRM function is refused, and nothing runs', async () => {
    const fn =
      'apiVersion: example.com/v1\nkind: Run\nmetadata:\n  name: run\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /bin/touch\n';
    const error = await failure(
      kustomize,
      { 'app/kustomization.yaml': kustomization('resources:\n  - cm.yaml\ntransformers:\n  - fn.yaml\n'), 'app/cm.yaml': cm('a'), 'app/fn.yaml': fn },
      'app',
    );
    expect(error.message).toMatch(/^kustomize: /);
    expect([RenderErrorReason.EngineRefused, RenderErrorReason.EngineFailed]).toContain(error.reason);
  });

  it("Helm's lookup is refused with the template's file and line", async () => {
    const error = await failure(helm, chart({ 'cm.yaml': `{{- $s := lookup "v1" "Secret" "ns" "db" }}\n${cm('x')}` }), 'chart');
    expect(error.reason).toBe(RenderErrorReason.EngineRefused);
    expect(error.message).toMatch(/^helm: .*c\/templates\/cm\.yaml:1:.*lookup is refused/);
  });

  it('a chart dependency missing from charts/ is not downloaded', async () => {
    const error = await failure(
      helm,
      {
        ...chart({ 'cm.yaml': cm('x') }),
        'chart/Chart.yaml':
          'apiVersion: v2\nname: c\nversion: 0.1.0\ndependencies:\n  - name: redis\n    version: 1.0.0\n    repository: https://charts.example.com\n',
      },
      'chart',
    );
    expect(error.reason).toBe(RenderErrorReason.EngineFailed);
    expect(error.message).toContain('missing in charts/ directory: redis');
  });
});

describe('limits: stopped, reported, and the process keeps serving', () => {
  const ok = async (): Promise<void> => {
    const objects = await renderWithEngine({
      engine,
      spec: kustomize,
      files: files({ 'ok/kustomization.yaml': kustomization('resources:\n  - cm.yaml\n'), 'ok/cm.yaml': cm('fine') }),
      path: 'ok',
      target: { name: 't', namespace: 'ns' },
      source: { repo: 'r', revision: 'b'.repeat(40) },
      discovery: createStaticDiscovery(),
      releaseName: 'r',
    });
    expect(objects.map((o) => o.metadata.name)).toEqual(['fine']);
  };

  it('a YAML alias bomb fails the render', async () => {
    const lol = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 10; i++)
      lol.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(',')}]`,
      );
    const bomb = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  ${lol.join('\n  ')}\n`;
    const error = await failure(kustomize, { 'app/kustomization.yaml': kustomization('resources:\n  - bomb.yaml\n'), 'app/bomb.yaml': bomb }, 'app', {
      memoryBytes: 256 * 1024 * 1024,
    });
    expect([RenderErrorReason.EngineFailed, RenderErrorReason.LimitExceeded]).toContain(error.reason);
    await ok();
    const helmError = await failure(helm, chart({ 'cm.yaml': cm('x') }, { 'chart/values.yaml': `x:\n  ${lol.join('\n  ')}\n` }), 'chart', {
      memoryBytes: 256 * 1024 * 1024,
    });
    expect([RenderErrorReason.EngineFailed, RenderErrorReason.LimitExceeded]).toContain(helmError.reason);
    await ok();
  }, 180_000);

  it('a render that never ends is killed at the time limit, naming the engine and the limit', async () => {
    const loop = 'local loop(n) = if n == 0 then {} else loop(n - 1) tailstrict;\nloop(1e15)';
    await ok();
    const starts = engine.stats.starts;
    const error = await failure({ engine: EngineName.Jsonnet, options: {} }, { 'j/main.jsonnet': loop }, 'j/main.jsonnet', { timeoutMs: 1500 });
    expect(error.reason).toBe(RenderErrorReason.LimitExceeded);
    expect(error.message).toBe('jsonnet: the render did not finish within the time limit of 1.5s and was stopped');
    await ok();
    expect(engine.stats.starts).toBe(starts + 1);
  }, 60_000);

  it('a render that explodes in memory is killed at the memory limit', async () => {
    const explode =
      "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { n: std.toString(std.length(std.makeArray(1e9, function(i) i))) } }";
    const error = await failure({ engine: EngineName.Jsonnet, options: {} }, { 'j/main.jsonnet': explode }, 'j/main.jsonnet', {
      memoryBytes: 128 * 1024 * 1024,
      timeoutMs: 120_000,
    });
    expect(error.reason).toBe(RenderErrorReason.LimitExceeded);
    expect(error.message).toBe('jsonnet: the render used more than the memory limit of 128 MiB and was stopped');
    await ok();
  }, 120_000);

  it('an output over the limit is refused', async () => {
    const many = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`app/cm-${i}.yaml`, cm(`cm-${i}`)]));
    const error = await failure(
      kustomize,
      {
        ...many,
        'app/kustomization.yaml': kustomization(
          `resources:\n${Object.keys(many)
            .map((p) => `  - ${p.slice(4)}`)
            .join('\n')}\n`,
        ),
      },
      'app',
      { maxOutputBytes: 10_000 },
    );
    expect(error.reason).toBe(RenderErrorReason.LimitExceeded);
    expect(error.message).toMatch(/^kustomize: the output is \d+ bytes, over the limit of 10000 bytes$/);
    await ok();
  });

  it('a missing binary is a transient failure, not a finding about the repository', async () => {
    const broken = new RenderEngine({ binary: '/nonexistent/syncline-render' });
    await expect(broken.render({ engine: EngineName.Jsonnet, files: [], input: { main: 'x.jsonnet' } })).rejects.toMatchObject({
      kind: EngineFailureKind.Unavailable,
    });
  });
});

describe('renders are cached by their inputs', () => {
  it('the same commit, path, inputs and target render once; another revision or target renders again', async () => {
    const cache = new EngineRenderCache();
    const options = {
      engine,
      spec: kustomize,
      files: files({ 'ok/kustomization.yaml': kustomization('resources:\n  - cm.yaml\n'), 'ok/cm.yaml': cm('fine') }),
      path: 'ok',
      target: { name: 't', namespace: 'ns' },
      source: { repo: 'r', revision: 'c'.repeat(40) },
      discovery: createStaticDiscovery(),
      releaseName: 'r',
      cache,
    };
    const renders = engine.stats.renders;
    const first = await renderWithEngine(options);
    const second = await renderWithEngine(options);
    expect(second).toEqual(first);
    expect(engine.stats.renders).toBe(renders + 1);
    await renderWithEngine({ ...options, source: { repo: 'r', revision: 'd'.repeat(40) } });
    await renderWithEngine({ ...options, target: { name: 'u', namespace: 'ns' } });
    expect(engine.stats.renders).toBe(renders + 3);
    expect(first[0]?.metadata.namespace).toBe('ns');
  });
});
