import { describe, expect, it } from 'vitest';
import { alertIndex, alertMatches, refusedSources, type AlertView } from './alerts.ts';
import { dedupKey } from './controller.ts';
import { RecoveryTracker, categorize, notificationEvent } from './event.ts';

const trusted = new Set(['platform']);
const alert = (namespace: string, spec: Partial<AlertView['spec']>): AlertView => ({
  namespace,
  name: 'a',
  spec: { providerRef: { name: 'p' }, eventSources: [{ kind: '*', name: '*' }], eventSeverity: 'info', suspend: false, ...spec },
});
const object = (namespace: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'syncline.dev/v1alpha1',
  kind: 'ConfigSync',
  metadata: { name: 'web', namespace, labels },
});
const event = (namespace: string, type: 'Normal' | 'Warning', reason: string, recovered = false) =>
  notificationEvent({ object: object(namespace), event: { type, reason, message: 'm' }, recovered, now: new Date(0) });

describe('alertMatches', () => {
  it('an untrusted NotificationAlert sees only its own namespace, and says why for the rest', () => {
    const a = alert('team', {
      eventSources: [
        { kind: 'ConfigSync', name: '*', namespace: 'other' },
        { kind: 'ConfigSync', name: '*' },
      ],
    });
    expect(alertMatches(a, event('team', 'Warning', 'RenderFailed'), trusted)).toBe(true);
    expect(alertMatches(a, event('other', 'Warning', 'RenderFailed'), trusted)).toBe(false);
    expect(refusedSources(a, trusted)[0]).toMatch(/NamespaceNotAllowed.*own namespace/);
  });

  it('a trusted NotificationAlert may name other namespaces', () => {
    const a = alert('platform', { eventSources: [{ kind: 'ConfigSync', name: 'web', namespace: 'team' }] });
    expect(alertMatches(a, event('team', 'Normal', 'Synced'), trusted)).toBe(true);
    expect(refusedSources(a, trusted)).toEqual([]);
  });

  it('names, kinds and labels', () => {
    const a = alert('team', { eventSources: [{ kind: 'ManifestSync', name: '*' }] });
    expect(alertMatches(a, event('team', 'Normal', 'Synced'), trusted)).toBe(false);
    const labelled = alert('team', { eventSources: [{ kind: '*', name: '*', matchLabels: { tier: 'web' } }] });
    const withLabels = notificationEvent({
      object: object('team', { tier: 'web' }),
      event: { type: 'Normal', reason: 'Synced', message: 'm' },
      recovered: false,
      now: new Date(0),
    });
    expect(alertMatches(labelled, withLabels, trusted)).toBe(true);
    expect(alertMatches(labelled, event('team', 'Normal', 'Synced'), trusted)).toBe(false);
  });

  it('severity error: Warnings and recoveries only; reasons by category or exact reason', () => {
    const errors = alert('team', { eventSeverity: 'error' });
    expect(alertMatches(errors, event('team', 'Normal', 'Synced'), trusted)).toBe(false);
    expect(alertMatches(errors, event('team', 'Normal', 'Synced', true), trusted)).toBe(true);
    expect(alertMatches(alert('team', { eventReasons: ['HealthDegraded'] }), event('team', 'Warning', 'HealthCheckFailed'), trusted)).toBe(true);
    expect(alertMatches(alert('team', { eventReasons: ['RenderFailed'] }), event('team', 'Warning', 'RenderFailed'), trusted)).toBe(true);
    expect(alertMatches(alert('team', { eventReasons: ['Applied'] }), event('team', 'Warning', 'RenderFailed'), trusted)).toBe(false);
  });
});

describe('categories', () => {
  it('failover, health, failure, recovery, drift', () => {
    const o = object('team');
    expect(categorize(o, { type: 'Warning', reason: 'StandbyPromoted', message: '' }, false)).toBe('Failover');
    expect(categorize(o, { type: 'Warning', reason: 'HealthCheckFailed', message: '' }, false)).toBe('HealthDegraded');
    expect(categorize(o, { type: 'Warning', reason: 'HookFailed', message: '' }, false)).toBe('HookFailed');
    expect(categorize(o, { type: 'Warning', reason: 'ApplyFailed', message: '' }, false)).toBe('Failed');
    expect(categorize(o, { type: 'Normal', reason: 'Synced', message: 'revision 0123456789ab: 1 configured' }, true)).toBe('Recovered');
    const synced = {
      ...o,
      metadata: { ...o.metadata, generation: 2 },
      status: { observedGeneration: 2, sourceRevision: '0123456789abcdef0123456789abcdef01234567' },
    };
    expect(categorize(synced, { type: 'Normal', reason: 'Synced', message: 'revision 0123456789ab: 1 configured' }, false)).toBe('DriftCorrected');
    expect(categorize(synced, { type: 'Normal', reason: 'Synced', message: 'revision fedcba987654: 1 configured' }, false)).toBe('Applied');
  });

  it('a Normal Event after a Warning of the same object is a recovery, once', () => {
    const tracker = new RecoveryTracker();
    expect(tracker.observe('x', 'Warning')).toBe(false);
    expect(tracker.observe('x', 'Normal')).toBe(true);
    expect(tracker.observe('x', 'Normal')).toBe(false);
  });
});

describe('alertIndex', () => {
  const view = (namespace: string, name: string, eventSources: AlertView['spec']['eventSources']): AlertView => ({
    ...alert(namespace, { eventSources }),
    name,
  });
  const sync = (namespace: string, name: string) => ({ namespace, kind: 'ConfigSync', name });

  it('an object meets the NotificationAlerts that name it, its kind or any kind, in its own namespace, each once', () => {
    const alerts = [
      view('team', 'exact', [{ kind: 'ConfigSync', name: 'web' }]),
      view('team', 'other', [{ kind: 'ConfigSync', name: 'db' }]),
      view('team', 'kind', [{ kind: 'ConfigSync', name: '*' }]),
      view('team', 'any', [{ kind: '*', name: '*' }]),
      view('team', 'twice', [
        { kind: 'ConfigSync', name: 'web' },
        { kind: '*', name: 'web' },
      ]),
      view('elsewhere', 'exact', [{ kind: 'ConfigSync', name: 'web' }]),
      view('platform', 'remote', [{ kind: 'ConfigSync', name: 'web', namespace: 'team' }]),
    ];
    const index = alertIndex(
      () => alerts,
      (a) => a,
    );
    const names = (found: readonly AlertView[]) => found.map((a) => `${a.namespace}/${a.name}`).sort();
    expect(names(index.of(sync('team', 'web')))).toEqual(['platform/remote', 'team/any', 'team/exact', 'team/kind', 'team/twice']);
    expect(names(index.of(sync('team', 'db')))).toEqual(['team/any', 'team/kind', 'team/other']);
    expect(names(index.of({ namespace: 'team', kind: 'Replication', name: 'web' }))).toEqual(['team/any', 'team/twice']);
    expect(index.of(sync('nobody', 'web'))).toEqual([]);
  });

  it('the NotificationAlerts of one object under one key come back as that list, without copies; reset reads them again', () => {
    let alerts = [view('team', 'exact', [{ kind: 'ConfigSync', name: 'web' }])];
    const index = alertIndex(
      () => alerts,
      (a) => a,
    );
    const first = index.of(sync('team', 'web'));
    expect(index.of(sync('team', 'web'))).toBe(first);
    alerts = [...alerts, view('team', 'more', [{ kind: 'ConfigSync', name: 'web' }])];
    expect(index.of(sync('team', 'web'))).toHaveLength(1);
    index.reset();
    expect(index.of(sync('team', 'web'))).toHaveLength(2);
  });

  it('an invalid NotificationAlert (no view) is filed nowhere', () => {
    const index = alertIndex(
      () => [{ spec: 'invalid' }],
      () => undefined,
    );
    expect(index.of(sync('team', 'web'))).toEqual([]);
  });
});

describe('dedupKey', () => {
  const at = (now: number, message = 'm') =>
    notificationEvent({ object: object('team'), event: { type: 'Normal', reason: 'Synced', message }, recovered: false, now: new Date(now) });

  it('the same words about the same object are one key, whenever they come; other words or another summary are another', () => {
    expect(dedupKey(at(0), undefined)).toBe(dedupKey(at(60_000), undefined));
    expect(dedupKey(at(0), undefined)).not.toBe(dedupKey(at(0, 'n'), undefined));
    expect(dedupKey(at(0), 'one')).not.toBe(dedupKey(at(0), 'two'));
    expect(dedupKey(at(0), undefined)).not.toBe(dedupKey({ ...at(0), name: 'api' }, undefined));
  });
});
