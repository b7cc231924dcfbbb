// `pnpm bench render`: 1,000 templated objects × 10 targets = 10,000 objects, three ways in the same run:
// - new commit: the operator's case after a push; the cache (by file and text) already holds the templates of the
//   previous commit and 10 of the 1,000 files changed, so 10 compile;
// - cold cache: every template compiled once (the first render after a start), reused by the other 9 targets;
// - no cache: every target compiles every template.
// Figures and targets on the last lines. Each figure is wall-clock and, beside it, the CPU time of the process
// (process.cpuUsage, user + system) over the same render: on a shared machine the CPU time moves far less with load.
import { performance } from 'node:perf_hooks';
import { benchEngines } from './_engines.ts';
import { TemplateCache, createStaticDiscovery, layerValues, renderTarget } from '../src/index.ts';
import type { SourceFile } from '../src/index.ts';

const templates = 1_000;
const targets = 10;
const rounds = 3;
const revision = '0123456789abcdef0123456789abcdef01234567';

function deployment(i: number): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: svc-${i}
  labels:
    {{> labels}}
    component: svc-${i}
spec:
  replicas: {{values.replicas}}
  selector:
    matchLabels:
      app: svc-${i}
  template:
    metadata:
      labels:
        app: svc-${i}
      annotations:
        checksum/config: {{sha256 values.image.tag}}
    spec:
      containers:
        - name: app
          image: "{{values.image.repository}}:{{values.image.tag}}"
          args: ["--env", "{{target.name}}", "--id", "${i}"]
          env:
            - name: LOG_LEVEL
              value: {{upper (default "info" values.logLevel)}}
            - name: REGION
              value: {{quote values.region}}
          resources: {{nindent 12 (toYaml values.resources)}}
{{#if values.monitoring}}
          ports:
            - name: metrics
              containerPort: 9090
{{/if}}
`;
}

const files: SourceFile[] = [
  { path: 'apps/fleet/_partials/labels.hbs', content: 'app.kubernetes.io/part-of: fleet\napp.kubernetes.io/instance: {{target.name}}\n' },
  ...Array.from({ length: templates }, (_, i) => ({ path: `apps/fleet/svc-${String(i).padStart(4, '0')}.yaml.hbs`, content: deployment(i) })),
];
const values = layerValues([
  { replicas: 2, image: { repository: 'registry.example.com/app', tag: '1.2.3' }, region: 'eu-west-1', monitoring: true, resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } } },
]);
const discovery = createStaticDiscovery();
const bytes = files.reduce((n, f) => n + (typeof f.content === 'string' ? f.content.length : f.content.byteLength), 0);

interface Measured {
  readonly ms: number;
  readonly cpuMs: number;
  readonly objects: number;
}

function renderAll(cache: TemplateCache | undefined, sources: readonly SourceFile[] = files): Measured {
  const cpu = process.cpuUsage();
  const start = performance.now();
  let objects = 0;
  for (let t = 0; t < targets; t++) {
    objects += renderTarget({
      files: sources,
      path: 'apps/fleet',
      values,
      target: { name: `env-${t}`, namespace: `env-${t}`, values: { replicas: t + 1 } },
      source: { repo: 'https://git.example.com/org/configs.git', revision },
      discovery,
      ...(cache === undefined ? {} : { cache }),
    }).length;
  }
  const ms = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { ms, cpuMs: (used.user + used.system) / 1000, objects };
}

/** The next commit: 1% of the templates changed (a new label value). */
function nextCommit(previous: readonly SourceFile[], round: number): SourceFile[] {
  return previous.map((file, i) => (i > 0 && i % 100 === round % 100 && typeof file.content === 'string' ? { ...file, content: file.content.replace('component: ', `commit: c${round}\n    component: `) } : file));
}

const gc = (globalThis as { gc?: () => void }).gc;
renderAll(new TemplateCache()); // warm up the JIT
const cold: Measured[] = [];
const commit: Measured[] = [];
const uncached: Measured[] = [];
let coldStats = { hits: 0, misses: 0 };
let commitCompiles = 0;
let objects = 0;
const operatorCache = new TemplateCache();
let current: SourceFile[] = files;
renderAll(operatorCache, current);
for (let round = 0; round < rounds; round++) {
  gc?.();
  current = nextCommit(current, round + 1);
  const before = operatorCache.stats.misses;
  commit.push(renderAll(operatorCache, current));
  commitCompiles = operatorCache.stats.misses - before;
  gc?.();
  const cache = new TemplateCache();
  const withCache = renderAll(cache);
  coldStats = cache.stats;
  cold.push(withCache);
  objects = withCache.objects;
  gc?.();
  uncached.push(renderAll(undefined));
}
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const wall = (runs: readonly Measured[]): number => median(runs.map((r) => r.ms));
const cpuOf = (runs: readonly Measured[]): number => median(runs.map((r) => r.cpuMs));
const n = wall(commit);
const c = wall(cold);
const u = wall(uncached);
const perObject = (ms: number): string => `${((ms * 1000) / objects).toFixed(1)} µs/object`;
const cpuNote = (runs: readonly Measured[]): string => `CPU ${cpuOf(runs).toFixed(0)} ms`;
console.log(`render: ${templates} templates (${(bytes / 1024).toFixed(0)} KiB) × ${targets} targets = ${objects} objects, median of ${rounds} rounds, Node ${process.versions.node}`);
console.log(`no cache (compile every target):         total ${u.toFixed(0)} ms (${cpuNote(uncached)}), ${perObject(u)}`);
console.log(`cold cache (compile each template once): total ${c.toFixed(0)} ms (${cpuNote(cold)}), ${perObject(c)}, compiles ${coldStats.misses}, cache hits ${coldStats.hits}`);
console.log(`new commit (1% of templates changed):    total ${n.toFixed(0)} ms (${cpuNote(commit)}), ${perObject(n)}, compiles ${commitCompiles}`);
console.log(`target: ${objects} objects after a new commit ≤ 1000 ms: ${n.toFixed(0)} ms ${n <= 1000 ? 'met' : 'NOT met'} (CPU ${cpuOf(commit).toFixed(0)} ms); cold cache ${c.toFixed(0)} ms (${c <= 1000 ? 'also within' : 'over'} 1000 ms)`);

await benchEngines();
