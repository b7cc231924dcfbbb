// `pnpm bench operator --mixed`: the operator bench twice, each on a fresh control plane and operator (with
// leader election, so its Lease renewals are measured): the ConfigSyncs alone, then the same ConfigSyncs beside
// one NamespaceReplication of a 1,000-object namespace with every default kind (a standby namespace in the same
// cluster) and 20 labelled Secrets mirrored into 5 namespaces each, replicated and mirrored before the
// ConfigSyncs are created. Prints the two runs' figures side by side, each with its change against the
// ConfigSyncs-only run (target: within 10%; every figure is better lower, so only an increase counts: a mixed
// run that came out faster is noise of the machine, not a miss), and the largest gap between two Lease renewals
// of each run (target: never later than the lease duration).
import type { KubeRest, NamespaceReplication } from '@syncline/operator';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LeaseWatcher } from './_leases.ts';
import { defaultKindObjects, missingObjects } from './_kinds.ts';
import { pool, sleep } from './_environment.ts';

export type MixedPartName = 'configsyncs' | 'mixed';

/** What one run measured (operator.ts fills in its own figures; the part adds the Lease's). */
export type RunFigures = {
  readonly allReadyMs: number;
  readonly newCommitMs: number;
  readonly fetchesPerCommit: number;
  readonly peakRssMb: number;
  readonly steadyWrites: number;
  readonly firstReads: number;
  readonly steadyReads: number;
  readonly refLookupsPerRefresh: number;
  readonly cpuPercent: number;
};

type PartFigures = RunFigures & { lease: { renewals: number; late: number; maxGapMs: number; p99GapMs: number; periodMs: number }; load?: string };

const SOURCE = 'shop';
const OBJECTS = 1000;
const MIRRORED = 20;
const MIRROR_NAMESPACES = Array.from({ length: 5 }, (_, i) => `mirror-${i}`);
const LEASE = 'syncline-bench';
const LEASE_SECONDS = 15;

export type MixedPart = {
  /** Arguments for the operator: leader election on a Lease in the bench namespace, which is trusted (the NamespaceReplication's source is another namespace). */
  readonly operatorArgs: readonly string[];
  /** Waits until the background load is in place (replicated and mirrored). */
  ready(progress: (line: string) => void): Promise<void>;
  /** Writes this run's figures, with the Lease's, to `file` for the comparing parent. */
  report(file: string, figures: RunFigures): Promise<void>;
};

/** Sets up one part of the comparison in the bench's own environment (before the operator starts). */
export async function mixedPart(name: string | undefined, options: { rest: KubeRest; namespace: string }): Promise<MixedPart | undefined> {
  if (name === undefined) return undefined;
  if (name !== 'configsyncs' && name !== 'mixed') throw new Error(`--part must be configsyncs or mixed, not ${name}`);
  const { rest, namespace } = options;
  const leases = new LeaseWatcher({ rest, namespace, name: LEASE });
  const watching = new AbortController();
  const leaseRun = leases.run(watching.signal);
  const objects = defaultKindObjects(SOURCE, OBJECTS);
  let load: string | undefined;
  if (name === 'mixed') {
    await rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: SOURCE } } });
    await pool(objects, 16, (o) => rest.request({ method: 'POST', path: o.path, body: o.body }));
    for (const target of MIRROR_NAMESPACES) await rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: target } } });
  }
  return {
    operatorArgs: [
      '--leader-elect',
      '--leader-election-namespace',
      namespace,
      '--leader-election-id',
      LEASE,
      '--lease-duration',
      String(LEASE_SECONDS),
      '--trusted-namespaces',
      namespace,
    ],
    async ready(progress) {
      if (name !== 'mixed') return;
      const started = Date.now();
      // interval 1h: the relist safety net stays out of the steady window, as the ConfigSyncs' resyncs read nothing either.
      await rest.request({
        method: 'POST',
        path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/namespacereplications`,
        body: {
          apiVersion: 'syncline.dev/v1alpha1',
          kind: 'NamespaceReplication',
          metadata: { name: SOURCE },
          spec: { sourceNamespace: SOURCE, destination: { namespace: `${SOURCE}-standby` }, interval: '1h' },
        },
      });
      await pool(
        Array.from({ length: MIRRORED }, (_, i) => i),
        8,
        (i) =>
          rest.request({
            method: 'POST',
            path: `/api/v1/namespaces/${namespace}/secrets`,
            body: {
              metadata: {
                name: `mirrored-${i}`,
                labels: { 'syncline.dev/sync-source': 'true' },
                annotations: { 'syncline.dev/targets': MIRROR_NAMESPACES.join(',') },
              },
              stringData: { v: `value-${i}` },
            },
          }),
      );
      const deadline = Date.now() + 600_000;
      for (;;) {
        const nr = await rest.request<NamespaceReplication>({
          method: 'GET',
          path: `/apis/syncline.dev/v1alpha1/namespaces/${namespace}/namespacereplications/${SOURCE}`,
        });
        const replicated =
          nr.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true &&
          (await missingObjects(rest, objects, SOURCE, `${SOURCE}-standby`)).length === 0;
        const mirrors = await Promise.all(
          MIRROR_NAMESPACES.map(
            async (ns) =>
              (await rest.request<{ items: { metadata: { name: string } }[] }>({ method: 'GET', path: `/api/v1/namespaces/${ns}/secrets` })).items.filter((s) =>
                s.metadata.name.startsWith('mirrored-'),
              ).length,
          ),
        );
        const mirrored = mirrors.reduce((a, b) => a + b, 0);
        if (replicated && mirrored === MIRRORED * MIRROR_NAMESPACES.length) break;
        if (Date.now() > deadline)
          throw new Error(
            `the background load was not in place within 600 s: replicated ${replicated}, ${mirrored}/${MIRRORED * MIRROR_NAMESPACES.length} mirrors`,
          );
        await sleep(1000);
      }
      load = `${objects.length} objects replicated and ${MIRRORED}×${MIRROR_NAMESPACES.length} mirrors in place in ${((Date.now() - started) / 1000).toFixed(1)} s`;
      progress(load);
    },
    async report(file, figures) {
      watching.abort();
      await leaseRun;
      const { maxGapMs, p99GapMs } = leases.figures();
      const part: PartFigures = {
        ...figures,
        lease: { renewals: leases.renewals, late: leases.late.length, maxGapMs, p99GapMs, periodMs: LEASE_SECONDS * 1000 },
        ...(load === undefined ? {} : { load }),
      };
      await writeFile(file, JSON.stringify(part));
    },
  };
}

/** Runs this bench (`script`) twice, ConfigSyncs alone then mixed, with `args` (less --mixed), and prints the comparison. */
export async function runMixedComparison(script: string, args: readonly string[]): Promise<never> {
  const dir = await mkdtemp(join(tmpdir(), 'syncline-bench-mixed-'));
  const passed = args.filter((a) => a !== '--mixed');
  const parts: Partial<Record<MixedPartName, PartFigures>> = {};
  for (const part of ['configsyncs', 'mixed'] as const) {
    console.error(`[bench] --- ${part === 'mixed' ? 'mixed: ConfigSyncs beside a NamespaceReplication and mirrored Secrets' : 'ConfigSyncs alone'} ---`);
    const file = join(dir, `${part}.json`);
    const result = spawnSync(process.execPath, ['--expose-gc', script, ...passed, '--part', part, '--json', file], { stdio: ['ignore', 'inherit', 'inherit'] });
    if (result.status !== 0) {
      console.error(`the ${part} run failed (exit ${String(result.status)})`);
      process.exit(1);
    }
    parts[part] = JSON.parse(await readFile(file, 'utf8')) as PartFigures;
  }
  await rm(dir, { recursive: true, force: true });
  const alone = parts.configsyncs;
  const mixed = parts.mixed;
  if (alone === undefined || mixed === undefined) process.exit(1);
  printComparison(alone, mixed);
  process.exit(0);
}

function printComparison(alone: PartFigures, mixed: PartFigures): void {
  const rows: { label: string; key: keyof RunFigures; unit: string; digits: number }[] = [
    { label: 'time until all Ready', key: 'allReadyMs', unit: 's', digits: 2 },
    { label: 'new commit → all Ready', key: 'newCommitMs', unit: 's', digits: 2 },
    { label: 'git fetches for the new commit', key: 'fetchesPerCommit', unit: '', digits: 0 },
    { label: 'operator peak RSS', key: 'peakRssMb', unit: 'MB', digits: 0 },
    { label: 'steady writes (non-lease)', key: 'steadyWrites', unit: '', digits: 0 },
    { label: 'reads, first resync after the commit', key: 'firstReads', unit: '', digits: 0 },
    { label: 'steady reads (GET/LIST, non-lease)', key: 'steadyReads', unit: '', digits: 0 },
    { label: 'Git ref lookups per refresh interval', key: 'refLookupsPerRefresh', unit: '', digits: 1 },
    { label: 'operator CPU, steady (% of a core)', key: 'cpuPercent', unit: '', digits: 1 },
  ];
  const shown = (key: keyof RunFigures, value: number, digits: number): string => (key.endsWith('Ms') ? (value / 1000).toFixed(digits) : value.toFixed(digits));
  const misses: string[] = [];
  console.log('');
  console.log(`operator bench --mixed: the same ConfigSyncs alone and beside ${mixed.load ?? 'the background load'}`);
  console.log(`${'figure'.padEnd(40)}${'alone'.padStart(10)}${'mixed'.padStart(10)}${'change'.padStart(10)}  at most +10%`);
  for (const row of rows) {
    const a = alone[row.key];
    const m = mixed[row.key];
    const change = a === 0 ? (m === 0 ? 0 : Infinity) : (m - a) / a;
    const ok = change <= 0.1;
    if (!ok) misses.push(row.label);
    const changeText = Number.isFinite(change) ? `${change >= 0 ? '+' : ''}${(change * 100).toFixed(1)}%` : 'from 0';
    console.log(
      `${`${row.label}${row.unit === '' ? '' : ` (${row.unit})`}`.padEnd(40)}${shown(row.key, a, row.digits).padStart(10)}${shown(row.key, m, row.digits).padStart(10)}${changeText.padStart(10)}  ${ok ? 'met' : 'NOT met'}`,
    );
  }
  const lease = (f: PartFigures): string =>
    `${f.lease.renewals} renewals, max gap ${(f.lease.maxGapMs / 1000).toFixed(1)} s, p99 ${(f.lease.p99GapMs / 1000).toFixed(1)} s, ${f.lease.late} later than ${f.lease.periodMs / 1000} s`;
  const leaseOk = alone.lease.late === 0 && mixed.lease.late === 0 && alone.lease.renewals > 0 && mixed.lease.renewals > 0;
  console.log(`Lease renewals: alone ${lease(alone)}; mixed ${lease(mixed)}  (target: none later than the lease duration: ${leaseOk ? 'met' : 'NOT met'})`);
  console.log(
    `all figures within 10% of the ConfigSyncs-only run (none more than 10% higher): ${misses.length === 0 ? 'met' : `NOT met (${misses.join(', ')})`}`,
  );
}
