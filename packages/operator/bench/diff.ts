// `pnpm bench diff [--lines 20000] [--runs 3]`: what `syncline diff` does per object (project the live object
// onto the desired one, mask Secrets, YAML both, unified diff) for a ConfigMap of `--lines` data lines, live
// against desired: a few edits, an edit every 50 lines, every line edited (the whole middle replaced), and a
// Secret of as many keys with every value changed. Pure CPU, no cluster. Each case runs in a process of its own,
// so its peak RSS is that of one `syncline diff` of such an object. Figures on the last lines; target: each
// case under 1 s and 256 MB peak RSS.
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { diffYaml, maskSecrets, normalizeSecret, projectLive, unifiedDiff } from '../src/diff/diff.ts';

const { values: flags } = parseArgs({
  options: { lines: { type: 'string', default: '20000' }, runs: { type: 'string', default: '3' }, case: { type: 'string' } },
});
const LINES = Number(flags.lines);
const RUNS = Number(flags.runs);
const TARGET_MS = 1000;
const TARGET_RSS_MB = 256;

type Case = { live: Record<string, unknown>; desired: Record<string, unknown> };

const configMap = (edit: (i: number) => boolean): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'big', namespace: 'bench' },
  data: Object.fromEntries(Array.from({ length: LINES }, (_, i) => [`key-${String(i).padStart(6, '0')}`, edit(i) ? `edited value ${i}` : `value ${i}`])),
});
const liveOf = (desired: Record<string, unknown>): Record<string, unknown> => ({
  ...desired,
  metadata: { ...(desired['metadata'] as object), uid: 'u', resourceVersion: '1' },
  status: {},
});

/** The cases, built only when run (each in its own process). */
const cases: readonly { readonly name: string; readonly build: () => Case }[] = [
  { name: 'a few edits', build: () => ({ live: liveOf(configMap(() => false)), desired: configMap((i) => i % Math.floor(LINES / 5) === 7) }) },
  { name: 'an edit every 50 lines', build: () => ({ live: liveOf(configMap(() => false)), desired: configMap((i) => i % 50 === 0) }) },
  { name: 'every line edited', build: () => ({ live: liveOf(configMap(() => false)), desired: configMap(() => true) }) },
  {
    name: 'a Secret, every value changed',
    build: () => ({ live: { ...liveOf(configMap(() => false)), kind: 'Secret' }, desired: { ...configMap(() => true), kind: 'Secret' } }),
  },
];

/** The per-object path of `syncline diff` (commands.ts). */
function diffObject(live: unknown, desiredObject: unknown): string {
  const desired = normalizeSecret(desiredObject);
  const masked = maskSecrets(projectLive(live, desired), desired);
  return unifiedDiff(diffYaml(masked.live), diffYaml(masked.desired), { from: 'live/ConfigMap/bench/big', to: 'desired/ConfigMap/bench/big' });
}

if (flags.case !== undefined) {
  // One case, in this process: best time of RUNS, output lines, peak RSS, as JSON.
  const c = cases[Number(flags.case)]?.build();
  if (c === undefined) throw new Error(`no case ${flags.case}`);
  let best = Number.POSITIVE_INFINITY;
  let lines = 0;
  // The peak of one diff, as one `syncline diff` run has it: taken after the first run (later runs only add
  // garbage that a collection would free).
  let rssMb = 0;
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    const text = diffObject(c.live, c.desired);
    best = Math.min(best, performance.now() - started);
    if (run === 0) rssMb = process.resourceUsage().maxRSS / 1024;
    lines = text.split('\n').length - 1;
    if (c.live['kind'] === 'Secret' && /value \d/.test(text)) throw new Error('a Secret value reached the diff output');
  }
  console.log(JSON.stringify({ ms: best, lines, rssMb }));
} else {
  const results = cases.map((c, index) => {
    const child = spawnSync(
      process.execPath,
      [...process.execArgv, import.meta.filename, '--lines', String(LINES), '--runs', String(RUNS), '--case', String(index)],
      { encoding: 'utf8' },
    );
    if (child.status !== 0) throw new Error(`case ${c.name} failed: ${child.stderr}`);
    return { name: c.name, ...(JSON.parse(child.stdout.trim().split('\n').at(-1) ?? '{}') as { ms: number; lines: number; rssMb: number }) };
  });
  for (const r of results)
    console.log(`diff ${LINES} lines, ${r.name}: ${r.ms.toFixed(0)} ms (best of ${RUNS}), peak RSS ${r.rssMb.toFixed(0)} MB, ${r.lines} lines of output`);
  const slowest = Math.max(...results.map((r) => r.ms));
  const peak = Math.max(...results.map((r) => r.rssMb));
  const ok = slowest < TARGET_MS && peak < TARGET_RSS_MB;
  console.log(
    `diff ${LINES} lines: slowest case ${slowest.toFixed(0)} ms (target < ${TARGET_MS} ms), peak RSS ${peak.toFixed(0)} MB (target < ${TARGET_RSS_MB} MB): ${ok ? 'PASS' : 'FAIL'}`,
  );
  process.exitCode = ok ? 0 : 1;
}
