// `pnpm bench operator --engines`: the operator bench three times, each on a fresh control plane and operator:
// the syncs rendered by Handlebars (the reference), by Kustomize (a kustomization per sync, Flux's namePrefix per
// sync) and by Helm (a chart, the sync's name as the release), both through the render process. Prints each run's
// figures and, for Kustomize and Helm, the operator's peak RSS (target ≤ 1.3× Handlebars) and the time from a
// commit to every sync Ready at it (target ≤ 1.3× Handlebars), and their steady writes and reads (target 0).
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunFigures } from './_mixed.ts';

export const BenchEngine = { Handlebars: 'handlebars', Kustomize: 'kustomize', Helm: 'helm' } as const;
export type BenchEngine = (typeof BenchEngine)[keyof typeof BenchEngine];

/** The repository's files for one commit (`rev` changes every object), rendered by `engine`. */
export function engineFiles(engine: BenchEngine, rev: string): Record<string, string> {
  const ids = [1, 2, 3, 4, 5];
  switch (engine) {
    case BenchEngine.Handlebars:
      return Object.fromEntries(
        ids.map((i) => [
          `app/cm-${i}.yaml.hbs`,
          `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "{{ target.name }}-${i}"\ndata:\n  revision: "${rev}"\n  target: "{{ target.name }}"\n`,
        ]),
      );
    case BenchEngine.Kustomize:
      return {
        'app/kustomization.yaml': `resources:\n${ids.map((i) => `  - cm-${i}.yaml\n`).join('')}`,
        ...Object.fromEntries(
          ids.map((i) => [`app/cm-${i}.yaml`, `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${i}\ndata:\n  revision: "${rev}"\n`]),
        ),
      };
    case BenchEngine.Helm:
      return {
        'app/Chart.yaml': 'apiVersion: v2\nname: bench\nversion: 1.0.0\n',
        'app/values.yaml': `revision: "${rev}"\n`,
        ...Object.fromEntries(
          ids.map((i) => [
            `app/templates/cm-${i}.yaml`,
            `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-${i}\ndata:\n  revision: {{ .Values.revision | quote }}\n`,
          ]),
        ),
      };
  }
}

/** spec.source's engine fields for sync `i`. */
export function engineSource(engine: BenchEngine, i: number): Record<string, unknown> {
  if (engine === BenchEngine.Kustomize) return { kustomize: { namePrefix: `s${i}-` } };
  if (engine === BenchEngine.Helm) return { helm: {} };
  return {};
}

export function parseBenchEngine(value: string): BenchEngine {
  const found = Object.values(BenchEngine).find((e) => e === value);
  if (found === undefined) throw new Error(`--engine must be handlebars, kustomize or helm, not ${value}`);
  return found;
}

export async function runEngineComparison(script: string, args: readonly string[]): Promise<never> {
  const dir = await mkdtemp(join(tmpdir(), 'syncline-bench-engines-'));
  const passed = args.filter((a) => a !== '--engines');
  const runs = new Map<BenchEngine, RunFigures>();
  for (const engine of Object.values(BenchEngine)) {
    console.error(`[bench] --- ${engine} ---`);
    const file = join(dir, `${engine}.json`);
    const result = spawnSync(process.execPath, ['--expose-gc', script, ...passed, '--engine', engine, '--json', file], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (result.status !== 0) {
      console.error(`the ${engine} run failed (exit ${String(result.status)})`);
      process.exit(1);
    }
    runs.set(engine, JSON.parse(await readFile(file, 'utf8')) as RunFigures);
  }
  await rm(dir, { recursive: true, force: true });
  const base = runs.get(BenchEngine.Handlebars);
  if (base === undefined) process.exit(1);
  const verdict = (ok: boolean): string => (ok ? 'met' : 'MISSED');
  console.log('');
  console.log('engines side by side (each run on its own control plane and operator; the machine is shared, figures vary):');
  console.log(
    `  handlebars: peak RSS ${base.peakRssMb.toFixed(0)} MB, commit → all Ready ${(base.newCommitMs / 1000).toFixed(2)} s, steady writes ${base.steadyWrites}, steady reads ${base.steadyReads}`,
  );
  for (const engine of [BenchEngine.Kustomize, BenchEngine.Helm]) {
    const run = runs.get(engine);
    if (run === undefined) continue;
    const rss = run.peakRssMb / base.peakRssMb;
    const commit = run.newCommitMs / base.newCommitMs;
    console.log(
      `  ${engine}: peak RSS ${run.peakRssMb.toFixed(0)} MB = ${rss.toFixed(2)}× (target ≤ 1.3×: ${verdict(rss <= 1.3)}), commit → all Ready ${(run.newCommitMs / 1000).toFixed(2)} s = ${commit.toFixed(2)}× (target ≤ 1.3×: ${verdict(commit <= 1.3)}), steady writes ${run.steadyWrites} (target 0: ${verdict(run.steadyWrites === 0)}), steady reads ${run.steadyReads} (target ${base.steadyReads}, as Handlebars: ${verdict(run.steadyReads <= base.steadyReads)})`,
    );
  }
  process.exit(0);
}
