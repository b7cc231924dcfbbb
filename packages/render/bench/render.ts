// `pnpm bench render`: 1,000 templated objects × 10 targets, with compiled templates cached by (snapshot SHA,
// file) across targets, against the same render without a cache, measured in the same run. Figures on the last
// lines.
import { performance } from 'node:perf_hooks';
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

function renderAll(cache: TemplateCache | undefined): { ms: number; objects: number } {
  const start = performance.now();
  let objects = 0;
  for (let t = 0; t < targets; t++) {
    objects += renderTarget({
      files,
      path: 'apps/fleet',
      values,
      target: { name: `env-${t}`, namespace: `env-${t}`, values: { replicas: t + 1 } },
      source: { repo: 'https://git.example.com/org/configs.git', revision },
      discovery,
      ...(cache === undefined ? {} : { cache }),
    }).length;
  }
  return { ms: performance.now() - start, objects };
}

const gc = (globalThis as { gc?: () => void }).gc;
renderAll(new TemplateCache()); // warm up the JIT
const cached: number[] = [];
const uncached: number[] = [];
let stats = { hits: 0, misses: 0 };
let objects = 0;
for (let round = 0; round < rounds; round++) {
  gc?.();
  const cache = new TemplateCache();
  const withCache = renderAll(cache);
  stats = cache.stats;
  cached.push(withCache.ms);
  objects = withCache.objects;
  gc?.();
  uncached.push(renderAll(undefined).ms);
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const c = median(cached);
const u = median(uncached);
console.log(`render: ${templates} templates (${(bytes / 1024).toFixed(0)} KiB) × ${targets} targets = ${objects} objects, median of ${rounds} rounds, Node ${process.versions.node}`);
console.log(`cached   (TemplateCache by SHA+file): total ${c.toFixed(0)} ms, ${((c * 1000) / objects).toFixed(1)} µs/object, compiles ${stats.misses}, cache hits ${stats.hits}`);
console.log(`no cache (compile every target):      total ${u.toFixed(0)} ms, ${((u * 1000) / objects).toFixed(1)} µs/object`);
console.log(`ratio no-cache/cached: ${(u / c).toFixed(2)}x`);
