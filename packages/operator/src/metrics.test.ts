import { describe, expect, it } from 'vitest';
import { ResourceKind, createMetrics, objectLabels } from './metrics.ts';

/** `# TYPE name type` of every metric family in an exposition. */
function families(text: string): Array<{ name: string; type: string }> {
  return [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => ({ name: m[1] ?? '', type: m[2] ?? '' }));
}

/** Label names of every sample line. */
function labelNames(text: string): string[] {
  return [...text.matchAll(/^[a-z_:][a-zA-Z0-9_:]*\{([^}]*)\}/gm)].flatMap((m) =>
    [...(m[1] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)].map((l) => l[1] ?? ''),
  );
}

/**
 * Prometheus's naming rules (https://prometheus.io/docs/practices/naming/ and what `promtool check metrics`
 * lints): snake_case, base units as suffixes, `_total` on counters and only on counters, `_info` only on gauges,
 * the suffixes a histogram or summary adds never on anything else, and the application prefix once.
 */
function namingProblems(family: { name: string; type: string }): string[] {
  const { name, type } = family;
  const problems: string[] = [];
  if (!/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/.test(name)) problems.push('not snake_case');
  if (!name.startsWith('syncline_')) problems.push('no syncline_ prefix');
  if (/^syncline_(syncline|process_process|nodejs_nodejs)_/.test(name)) problems.push('prefixed twice');
  if (type === 'counter' && !name.endsWith('_total')) problems.push('counter without _total');
  if (type !== 'counter' && name.endsWith('_total')) problems.push('_total on a non-counter');
  if (name.endsWith('_info') && type !== 'gauge') problems.push('_info on a non-gauge');
  if (type !== 'histogram' && type !== 'summary' && /_(count|sum|bucket)$/.test(name)) problems.push('a histogram suffix on a non-histogram');
  // Base units only: seconds and bytes, never milli/micro/kilo/minutes.
  if (/_(milliseconds|microseconds|nanoseconds|minutes|hours|days|ms|us|ns|kilobytes|megabytes|gigabytes|kb|mb|gb|percent)(_|$)/.test(name))
    problems.push('not a base unit');
  if (/(duration|latency|lag|time)(_|$)/.test(name) && !/_seconds(_total)?$/.test(name)) problems.push('a time without _seconds');
  if (/_(size|heap|memory)$/.test(name)) problems.push('a size without _bytes');
  return problems;
}

async function exposition(): Promise<string> {
  const metrics = createMetrics();
  // One sample in every labelled family, so each appears in the exposition with its labels.
  metrics.reconcileDuration.observe({ result: 'success' }, 0.2);
  metrics.reconcileTotal.inc({ result: 'success' });
  metrics.objectsApplied.inc({ action: 'created' });
  metrics.gitDuration.observe({ operation: 'fetch' }, 0.1);
  metrics.gitCacheHits.inc({ outcome: 'hit' });
  metrics.webhookDeliveries.inc({ provider: 'github', result: 'accepted' });
  metrics.targetFailures.inc({ namespace: 'ops', name: 'web', target: 'prod' });
  metrics.managedObjects.set({ namespace: 'ops', name: 'web' }, 3);
  metrics.drLag.set({ namespace: 'ops', name: 'dr' }, 1);
  metrics.drObjects.set({ namespace: 'ops', name: 'dr', kind: 'Secret', result: 'replicated' }, 2);
  metrics.mirrorConflicts.set({ kind: 'Secret', namespace: 'ops', name: 'db' }, 1);
  metrics.trackResources(() => [{ kind: ResourceKind.ConfigSync, objects: [{ metadata: { namespace: 'ops', name: 'web' } }] }]);
  return metrics.registry.metrics();
}

describe('metric names', () => {
  it('every exposed family follows the Prometheus naming rules', async () => {
    const found = families(await exposition());
    expect(found.length).toBeGreaterThan(20);
    const problems = found.flatMap((f) => namingProblems(f).map((p) => `${f.name} (${f.type}): ${p}`));
    expect(problems).toEqual([]);
  });

  it('labels are snake_case and none is reserved', async () => {
    const names = new Set(labelNames(await exposition()));
    expect([...names].filter((l) => !/^[a-z][a-z0-9_]*$/.test(l) || l.startsWith('__'))).toEqual([]);
    // No combined `namespace/name` label is left.
    expect([...names].filter((l) => ['configsync', 'namespacereplication', 'source'].includes(l))).toEqual([]);
  });

  it('the rule set catches what it is there for', () => {
    expect(namingProblems({ name: 'syncline_process_process_cpu_seconds_total', type: 'counter' })).toContain('prefixed twice');
    expect(namingProblems({ name: 'syncline_reconciles', type: 'counter' })).toContain('counter without _total');
    expect(namingProblems({ name: 'syncline_queue_total', type: 'gauge' })).toContain('_total on a non-counter');
    expect(namingProblems({ name: 'syncline_fetch_milliseconds', type: 'histogram' })).toContain('not a base unit');
    expect(namingProblems({ name: 'syncline_replication_lag', type: 'gauge' })).toContain('a time without _seconds');
    expect(namingProblems({ name: 'synclineFetchesTotal', type: 'counter' })).toContain('not snake_case');
    expect(namingProblems({ name: 'syncline_build_info', type: 'counter' })).toContain('_info on a non-gauge');
  });

  it('process metrics carry the prefix once', async () => {
    const names = families(await exposition()).map((f) => f.name);
    expect(names).toContain('syncline_process_cpu_seconds_total');
    expect(names).toContain('syncline_nodejs_heap_size_used_bytes');
  });
});

describe('syncline_resource_info', () => {
  it('reports each object once with its readiness and suspension, and follows the source at each scrape', async () => {
    const metrics = createMetrics();
    let objects = [
      { metadata: { namespace: 'ops', name: 'web' }, spec: { suspend: false }, status: { conditions: [{ type: 'Ready', status: 'True' }] } },
      { metadata: { namespace: 'ops', name: 'db' }, spec: { suspend: true } },
    ];
    const untrack = metrics.trackResources(() => [
      { kind: ResourceKind.ConfigSync, objects },
      {
        kind: ResourceKind.RemoteCluster,
        objects: [{ metadata: { namespace: 'ops', name: 'east' }, status: { conditions: [{ type: 'Ready', status: 'False' }] } }],
      },
    ]);
    const info = async (): Promise<string[]> => ((await metrics.registry.metrics()).match(/^syncline_resource_info\{.*$/gm) ?? []).sort();

    expect(await info()).toEqual([
      'syncline_resource_info{kind="ConfigSync",namespace="ops",name="db",ready="Unknown",suspended="true"} 1',
      'syncline_resource_info{kind="ConfigSync",namespace="ops",name="web",ready="True",suspended="false"} 1',
      'syncline_resource_info{kind="RemoteCluster",namespace="ops",name="east",ready="False",suspended="false"} 1',
    ]);

    // web turns not ready, db is deleted: the old series go.
    objects = [{ metadata: { namespace: 'ops', name: 'web' }, spec: { suspend: false }, status: { conditions: [{ type: 'Ready', status: 'False' }] } }];
    expect((await info()).filter((l) => l.includes('ConfigSync'))).toEqual([
      'syncline_resource_info{kind="ConfigSync",namespace="ops",name="web",ready="False",suspended="false"} 1',
    ]);

    untrack();
    expect(await info()).toEqual([]);
  });
});

describe('forgetObject', () => {
  it("removes every series of a deleted object and leaves the others'", async () => {
    const metrics = createMetrics();
    metrics.managedObjects.set({ namespace: 'ops', name: 'web' }, 3);
    metrics.managedObjects.set({ namespace: 'ops', name: 'api' }, 1);
    metrics.targetFailures.inc({ namespace: 'ops', name: 'web', target: 'prod' });
    metrics.targetFailures.inc({ namespace: 'ops', name: 'web', target: 'staging' });
    metrics.drLag.set({ namespace: 'ops', name: 'web' }, 4);

    await metrics.forgetObject(ResourceKind.ConfigSync, 'ops', 'web');

    const text = await metrics.registry.metrics();
    expect(text).not.toMatch(/^syncline_(managed_objects|target_failures_total)\{namespace="ops",name="web"/m);
    expect(text).toMatch(/^syncline_managed_objects\{namespace="ops",name="api"\} 1$/m);
    // A NamespaceReplication of the same name is another object.
    expect(text).toMatch(/^syncline_dr_replication_lag_seconds\{namespace="ops",name="web"\} 4$/m);
  });

  it('splits sync keys into namespace and name', () => {
    expect(objectLabels('ops/web')).toEqual({ namespace: 'ops', name: 'web' });
    expect(objectLabels('Secret/ops/db')).toEqual({ namespace: 'ops', name: 'db' });
  });
});
