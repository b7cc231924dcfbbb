// Which NotificationAlerts an event goes to: pure matching of a NotificationAlert's sources, severity and reasons, under the tenancy
// rule: a NotificationAlert in a namespace that is not trusted sees only objects in its own namespace (the events of
// other tenants' objects are theirs to read), and always sends through a NotificationProvider of its own namespace.
import type { AlertSpec, EventCategory, EventSource } from '@syncline/api';
import { NAMESPACE_NOT_ALLOWED, type TrustedNamespaces } from '@syncline/runtime';
import type { NotificationEvent } from './event.ts';

export const EVENT_CATEGORIES: readonly EventCategory[] = ['Applied', 'Failed', 'DriftCorrected', 'HealthDegraded', 'Failover', 'Recovered', 'HookFailed'];

export type AlertView = { readonly namespace: string; readonly name: string; readonly spec: AlertSpec };

/** The namespace a source covers: its own, or the NotificationAlert's. */
export const sourceNamespace = (alert: AlertView, source: EventSource): string => source.namespace ?? alert.namespace;

/** Sources that reach outside the NotificationAlert's namespace without the right to: they match nothing. Empty when all may. */
export function refusedSources(alert: AlertView, trusted: TrustedNamespaces): string[] {
  if (trusted.has(alert.namespace)) return [];
  return alert.spec.eventSources
    .filter((s) => sourceNamespace(alert, s) !== alert.namespace)
    .map(
      (s) =>
        `${NAMESPACE_NOT_ALLOWED}: eventSources ${s.kind}/${s.name} in namespace ${sourceNamespace(alert, s)}: a NotificationAlert in namespace ${alert.namespace} sees only objects in its own namespace (trust the namespace with --trusted-namespaces)`,
    );
}

/** Whether one of the NotificationAlert's sources covers the object (kind, name, namespace, labels), within what it may see. */
export function sourceMatches(
  alert: AlertView,
  object: { kind: string; namespace: string; name: string; labels: Readonly<Record<string, string>> },
  trusted: TrustedNamespaces,
): boolean {
  return alert.spec.eventSources.some((source) => {
    const namespace = sourceNamespace(alert, source);
    if (namespace !== alert.namespace && !trusted.has(alert.namespace)) return false;
    if (namespace !== object.namespace) return false;
    if (source.kind !== '*' && source.kind !== object.kind) return false;
    if (source.name !== '*' && source.name !== object.name) return false;
    return Object.entries(source.matchLabels ?? {}).every(([key, value]) => object.labels[key] === value);
  });
}

/** Whether the NotificationAlert asks for this event: its source, its severity, and its reasons (categories or exact Event reasons). */
export function alertMatches(alert: AlertView, event: NotificationEvent, trusted: TrustedNamespaces): boolean {
  if (alert.spec.suspend) return false;
  if (!sourceMatches(alert, event, trusted)) return false;
  // A recovery ends an error someone was told about, so a NotificationAlert for errors hears it too.
  if (alert.spec.eventSeverity === 'error' && event.severity !== 'error' && !event.recovered) return false;
  const reasons = alert.spec.eventReasons;
  if (reasons === undefined || reasons.length === 0) return true;
  return reasons.includes(event.category) || reasons.includes(event.reason) || (event.recovered && reasons.includes('Failed'));
}

/** Where a NotificationAlert's source is filed: its namespace, kind and name (either may be `*`). */
const sourceKey = (namespace: string, kind: string, name: string): string => `${namespace}\u0000${kind}\u0000${name}`;

const NONE: readonly never[] = [];

/**
 * NotificationAlerts by the objects their sources name (namespace, kind or *, name or *): an event meets only the
 * NotificationAlerts that could ask for it, not every NotificationAlert of its namespace (one NotificationAlert per
 * sync is a common layout). Built on first use after `reset` (any NotificationAlert changed). `of` allocates nothing
 * when the NotificationAlerts that could ask are filed under one key (the common case: they name the object): it
 * returns that key's list, which the caller must not change.
 */
export function alertIndex<T extends object>(
  list: () => readonly T[],
  view: (alert: T) => AlertView | undefined,
): { of: (object: { namespace: string; kind: string; name: string }) => readonly T[]; reset: () => void } {
  let bySource: Map<string, T[]> | undefined;
  const build = (): Map<string, T[]> => {
    const index = new Map<string, T[]>();
    for (const alert of list()) {
      const parsed = view(alert);
      if (parsed === undefined) continue;
      for (const key of new Set(parsed.spec.eventSources.map((s) => sourceKey(sourceNamespace(parsed, s), s.kind, s.name)))) {
        const filed = index.get(key);
        if (filed === undefined) index.set(key, [alert]);
        else filed.push(alert);
      }
    }
    return index;
  };
  return {
    of: (object) => {
      bySource ??= build();
      if (bySource.size === 0) return NONE;
      let found: readonly T[] = NONE;
      let merged: Set<T> | undefined;
      for (const key of [
        sourceKey(object.namespace, object.kind, object.name),
        sourceKey(object.namespace, object.kind, '*'),
        sourceKey(object.namespace, '*', object.name),
        sourceKey(object.namespace, '*', '*'),
      ]) {
        const filed = bySource.get(key);
        if (filed === undefined) continue;
        if (found.length === 0) {
          found = filed;
          continue;
        }
        // A NotificationAlert filed under two of the keys is met once.
        merged ??= new Set(found);
        for (const alert of filed) merged.add(alert);
      }
      return merged === undefined ? found : [...merged];
    },
    reset: () => {
      bySource = undefined;
    },
  };
}
