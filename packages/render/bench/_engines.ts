// `pnpm bench render`, engine lines: Kustomize, Helm and Jsonnet through the render process, side by side with
// the official CLIs run as a process per render (Argo CD's model) in the same run. Binaries come from test
// support (built from their Go modules on first use, then cached).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ensureHelm, ensureJsonnet, ensureKustomize, ensureRenderEngine } from '@syncline/test-support';
import { EngineName, RenderEngine, type EngineFile } from '../src/index.ts';

const rounds = 10;
const root = join(import.meta.dirname, '..', '..', '..');
const say = (line: string): void => console.error(`[bench] ${line}`);
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
/** Mean CPU (ticks are 10 ms: a mean of many runs is finer than any one) and median wall time. */
const summary = (costs: readonly Cost[]): Cost => ({ wall: median(costs.map((c) => c.wall)), cpu: costs.reduce((sum, c) => sum + c.cpu, 0) / costs.length });

function tree(dir: string, prefix = ''): EngineFile[] {
  const out: EngineFile[] = [];
  const walk = (current: string): void => {
    for (const name of readdirSync(current).sort()) {
      const full = join(current, name);
      if (statSync(full).isDirectory()) walk(full);
      else out.push({ path: `${prefix}${relative(dir, full)}`, content: readFileSync(full) });
    }
  };
  walk(dir);
  return out;
}

function writeTree(dir: string, files: readonly EngineFile[]): void {
  for (const file of files) {
    mkdirSync(dirname(join(dir, file.path)), { recursive: true });
    writeFileSync(join(dir, file.path), file.content);
  }
}

/** A base of 25 Deployments and 25 ConfigMaps, and an overlay with a prefix, a label, an image and a patch. */
function overlay50(): EngineFile[] {
  const files: EngineFile[] = [];
  const resources: string[] = [];
  for (let i = 0; i < 25; i++) {
    files.push({
      path: `base/deploy-${i}.yaml`,
      content: `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-${i}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: app-${i}}\n  template:\n    metadata:\n      labels: {app: app-${i}}\n    spec:\n      containers:\n        - name: app\n          image: nginx:1.27\n          env: [{name: INDEX, value: "${i}"}]\n`,
    });
    files.push({
      path: `base/config-${i}.yaml`,
      content: `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-${i}\ndata:\n  index: "${i}"\n  text: ${'x'.repeat(200)}\n`,
    });
    resources.push(`deploy-${i}.yaml`, `config-${i}.yaml`);
  }
  files.push({ path: 'base/kustomization.yaml', content: `resources:\n${resources.map((r) => `  - ${r}`).join('\n')}\n` });
  files.push({
    path: 'overlays/prod/kustomization.yaml',
    content:
      'namespace: prod\nnamePrefix: prod-\nresources:\n  - ../../base\nlabels:\n  - pairs: {env: prod}\nimages:\n  - name: nginx\n    newTag: "1.28"\npatches:\n  - target: {kind: Deployment}\n    patch: |-\n      - op: replace\n        path: /spec/replicas\n        value: 3\n',
  });
  return files;
}

/** A chart whose one template ranges over `count` items: `count` ConfigMaps. */
function chart(count: number): EngineFile[] {
  return [
    { path: 'big/Chart.yaml', content: 'apiVersion: v2\nname: big\nversion: 0.1.0\n' },
    { path: 'big/values.yaml', content: `count: ${count}\n` },
    {
      path: 'big/templates/cm.yaml',
      content:
        '{{- range $i := until (int .Values.count) }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ $.Release.Name }}-{{ $i }}\n  labels:\n    app.kubernetes.io/instance: {{ $.Release.Name }}\ndata:\n  index: {{ $i | quote }}\n{{- end }}\n',
    },
  ];
}

/** Wall and CPU milliseconds of one run. CPU is the fair figure on a shared machine: wall time includes the wait for a core. */
type Cost = { wall: number; cpu: number };

/** CPU ms of a process from /proc (user + system), or of this process's waited-for children (`self`). */
function cpuMs(pid: number | 'self'): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // After the ") ": state is field 3, utime 14, stime 15, cutime 16, cstime 17 (1-based in proc(5)).
  const at = (n: number): number => Number(fields[n - 3] ?? 0);
  const ticks = pid === 'self' ? at(16) + at(17) : at(14) + at(15);
  return (ticks * 1000) / 100;
}

function cli(binary: string, args: readonly string[], cwd: string, home: string): Cost {
  const start = performance.now();
  const cpu = cpuMs('self');
  const result = spawnSync(binary, [...args], {
    cwd,
    env: { HOME: home, HELM_CACHE_HOME: join(home, 'c'), HELM_CONFIG_HOME: join(home, 'f'), HELM_DATA_HOME: join(home, 'd') },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`${binary} ${args.join(' ')}: ${result.stderr.toString()}`);
  return { wall: performance.now() - start, cpu: cpuMs('self') - cpu };
}

/** A render's wall time, and the CPU of the render process and of this process (encoding, framing, parsing). */
async function timed(engine: RenderEngine, fn: () => Promise<unknown>): Promise<Cost> {
  const start = performance.now();
  const pid = engine.pid;
  const before = pid === undefined ? 0 : cpuMs(pid);
  const self = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(self);
  const after = engine.pid === undefined || engine.pid !== pid ? before : cpuMs(engine.pid);
  return { wall: performance.now() - start, cpu: after - before + (used.user + used.system) / 1000 };
}

function rssOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? 0 : Number(match[1]) / 1024;
}

export async function benchEngines(): Promise<void> {
  const binary = await ensureRenderEngine({ onProgress: say });
  const kustomize = await ensureKustomize({ onProgress: say });
  const helm = await ensureHelm({ onProgress: say });
  const jsonnet = await ensureJsonnet({ onProgress: say });
  const work = mkdtempSync(join(tmpdir(), 'syncline-bench-engines-'));
  try {
    const overlay = overlay50();
    writeTree(join(work, 'k'), overlay);
    const syncline = tree(join(root, 'charts', 'syncline'), 'charts/syncline/');
    const big = chart(500);
    writeTree(join(work, 'h'), big);
    const jsonnetFiles = tree(join(root, 'packages', 'render', 'src', 'engines', 'testdata', 'jsonnet'));

    // First render after start: the process starts with the request.
    const engine = new RenderEngine({ binary });
    const kRequest = { engine: EngineName.Kustomize, files: overlay, input: { path: 'overlays/prod' } };
    const first = await timed(engine, () => engine.render(kRequest));
    const objects = (await engine.render(kRequest)).length;
    const kWarm = summary(await sequence(rounds, () => timed(engine, () => engine.render(kRequest))));
    const kCli = summary(await sequence(rounds, () => Promise.resolve(cli(kustomize, ['build', 'overlays/prod'], join(work, 'k'), work))));

    const hRequest = {
      engine: EngineName.Helm,
      files: syncline,
      input: { chart: 'charts/syncline', releaseName: 'syncline', namespace: 'syncline-system', includeCRDs: true, skipTests: true },
    };
    await engine.render(hRequest);
    const hWarm = summary(await sequence(rounds, () => timed(engine, () => engine.render(hRequest))));
    const hCli = summary(
      await sequence(rounds, () =>
        Promise.resolve(cli(helm, ['template', 'syncline', join(root, 'charts', 'syncline'), '--namespace', 'syncline-system', '--include-crds'], work, work)),
      ),
    );
    const bigRequest = { engine: EngineName.Helm, files: big, input: { chart: 'big', releaseName: 'big', namespace: 'x', includeCRDs: true, skipTests: true } };
    const bigObjects = (await engine.render(bigRequest)).length;
    const bigWarm = summary(await sequence(rounds, () => timed(engine, () => engine.render(bigRequest))));
    const bigCli = summary(
      await sequence(rounds, () => Promise.resolve(cli(helm, ['template', 'big', join(work, 'h', 'big'), '--namespace', 'x'], work, work))),
    );

    const jRequest = { engine: EngineName.Jsonnet, files: jsonnetFiles, input: { main: 'main.jsonnet', libraryPaths: ['vendor'], extVars: { env: 'prod' } } };
    await engine.render(jRequest);
    const jWarm = summary(await sequence(rounds, () => timed(engine, () => engine.render(jRequest))));
    const jCli = summary(
      await sequence(rounds, () =>
        Promise.resolve(
          cli(jsonnet, ['-J', 'vendor', '-V', 'env=prod', 'main.jsonnet'], join(root, 'packages', 'render', 'src', 'engines', 'testdata', 'jsonnet'), work),
        ),
      ),
    );

    // 200 renders of different inputs (200 syncs' first renders), then the render process's resident memory.
    for (let i = 0; i < 100; i++) {
      await engine.render({ ...kRequest, input: { path: 'overlays/prod', namePrefix: `s${i}-` } });
      await engine.render({ ...hRequest, input: { ...hRequest.input, releaseName: `s${i}` } });
    }
    const rss = rssOf(engine.pid);
    engine.close();

    const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}×`;
    const line = (what: string, warm: Cost, cliCost: Cost): void =>
      console.log(
        `${what}: warm ${warm.wall.toFixed(1)} ms wall, ${warm.cpu.toFixed(1)} ms CPU vs the CLI as a process ${cliCost.wall.toFixed(1)} ms wall, ${cliCost.cpu.toFixed(1)} ms CPU = ${ratio(warm.wall, cliCost.wall)} wall, ${ratio(warm.cpu, cliCost.cpu)} CPU (target ≤ 0.5×: wall ${warm.wall <= cliCost.wall / 2 ? 'met' : 'NOT met'}, CPU ${warm.cpu <= cliCost.cpu / 2 ? 'met' : 'NOT met'})`,
      );
    console.log(
      `engines: syncline-render (one process, files in memory), ${rounds} runs each (wall: median; CPU: mean, render process + client); CLIs built from the same module versions`,
    );
    line(`kustomize overlay of ${objects} objects`, kWarm, kCli);
    console.log(
      `kustomize first render after start (process start included): ${first.wall.toFixed(0)} ms (target ≤ 1000 ms: ${first.wall <= 1000 ? 'met' : 'NOT met'})`,
    );
    line('helm charts/syncline (default values, CRDs)', hWarm, hCli);
    console.log(
      `helm chart of ${bigObjects} objects: warm ${bigWarm.wall.toFixed(1)} ms wall, ${bigWarm.cpu.toFixed(1)} ms CPU (target ≤ 200 ms: ${bigWarm.wall <= 200 ? 'met' : 'NOT met'}); helm template as a process ${bigCli.wall.toFixed(1)} ms wall, ${bigCli.cpu.toFixed(1)} ms CPU`,
    );
    line('jsonnet (testdata, library path, ext var)', jWarm, jCli);
    console.log(`render process RSS after 200 renders (100 overlays, 100 charts/syncline): ${rss.toFixed(0)} MB`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function sequence(n: number, fn: () => Promise<Cost>): Promise<Cost[]> {
  const out: Cost[] = [];
  for (let i = 0; i < n; i++) out.push(await fn());
  return out;
}
