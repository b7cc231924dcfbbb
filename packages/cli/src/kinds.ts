// The kinds the CLI's generic verbs (get, suspend, resume, reconcile, events) work on, named as kubectl
// names them (kind, plural, singular or short name, case-insensitive), and their table columns: the CRDs'
// own printer columns, so `syncline get` and `kubectl get` show the same thing.
import { GROUP, VERSION, crdDefinitions } from '@syncline/api';

export type KindInfo = {
  readonly kind: string;
  readonly plural: string;
  readonly names: readonly string[];
  /** Has spec.suspend. */
  readonly suspendable: boolean;
  /** Records the reconcile request it handled (status.lastHandledReconcileAt), so reconcile --wait can wait for it. */
  readonly recordsRequests: boolean;
  readonly columns: ReadonlyArray<{ readonly name: string; readonly jsonPath: string; readonly type: string; readonly priority?: number }>;
};

/** The columns `syncline get nsrepl` adds (client-side, filled by standby-view.ts; kubectl shows the CRD's own). */
export const STANDBY_VIEW_COLUMNS = [
  { name: 'Heartbeat', type: 'date', description: "Age of the primary's last heartbeat as the standby stored it.", jsonPath: '.standbyView.lastHeartbeat' },
  {
    name: 'Standby',
    type: 'string',
    description: 'standby, promoted (from the standby side), or why the standby could not be read.',
    jsonPath: '.standbyView.state',
  },
] as const;

export const KINDS: readonly KindInfo[] = crdDefinitions.map((def) => ({
  kind: def.kind,
  plural: def.plural,
  names: [def.kind.toLowerCase(), def.plural, def.singular, ...def.shortNames],
  // RemoteCluster has no spec.suspend: it is probed, not synced.
  suspendable: def.kind !== 'RemoteCluster',
  recordsRequests: def.kind === 'ConfigSync',
  // NamespaceReplications also show their standby's own view (read live by getCommand, see standby-view.ts).
  columns: def.kind === 'NamespaceReplication' ? withColumnsBefore(def.printerColumns, 'Status', STANDBY_VIEW_COLUMNS) : def.printerColumns,
}));

function withColumnsBefore(columns: KindInfo['columns'], before: string, added: KindInfo['columns']): KindInfo['columns'] {
  const at = columns.findIndex((c) => c.name === before);
  return at === -1 ? [...columns, ...added] : [...columns.slice(0, at), ...added, ...columns.slice(at)];
}

export function kindNames(): string {
  return KINDS.map((k) => `${k.plural} (${k.names.filter((n) => n !== k.plural && n !== k.kind.toLowerCase()).join(', ')})`).join(', ');
}

/** A kind as typed on the command line → its info; a clear error naming the kinds otherwise. */
export function resolveKind(typed: string): KindInfo {
  const name = typed.toLowerCase().replace(/\.syncline\.dev$/, '');
  const found = KINDS.find((k) => k.names.includes(name));
  if (found === undefined) throw new Error(`the server doesn't have a resource type "${typed}" in syncline.dev (known: ${kindNames()})`);
  return found;
}

/** `reconcile NAME` (a ConfigSync, as before) or `reconcile KIND NAME`. */
export function kindAndName(first: string, second: string | undefined): { info: KindInfo; name: string } {
  if (second === undefined) return { info: resolveKind('configsync'), name: first };
  return { info: resolveKind(first), name: second };
}

export function collectionPath(info: KindInfo, namespace: string | undefined): string {
  return `/apis/${GROUP}/${VERSION}${namespace === undefined ? '' : `/namespaces/${namespace}`}/${info.plural}`;
}

export function objectPath(info: KindInfo, namespace: string, name: string): string {
  return `${collectionPath(info, namespace)}/${name}`;
}

type Row = Record<string, unknown>;

/** The printer columns kubectl would show (priority 1 only with -o wide), NAMESPACE first with -A. */
export function formatTable(info: KindInfo, items: readonly Row[], options: { wide: boolean; allNamespaces: boolean; now: Date; headers?: boolean }): string {
  const columns = info.columns.filter((c) => options.wide || (c.priority ?? 0) === 0);
  const header = [...(options.allNamespaces ? ['NAMESPACE'] : []), 'NAME', ...columns.map((c) => c.name.toUpperCase())];
  const rows = items.map((item) => {
    const metadata = (item['metadata'] ?? {}) as { name?: string; namespace?: string };
    return [
      ...(options.allNamespaces ? [metadata.namespace ?? ''] : []),
      metadata.name ?? '',
      ...columns.map((c) => cellText(evaluateJsonPath(item, c.jsonPath), c.type, options.now)),
    ];
  });
  return alignRows(options.headers === false ? rows : [header, ...rows]);
}

export function alignRows(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return (
    rows
      .map((r) =>
        r
          .map((cell, i) => cell.padEnd(widths[i] ?? 0))
          .join('   ')
          .trimEnd(),
      )
      .join('\n') + (rows.length === 0 ? '' : '\n')
  );
}

/**
 * The JSONPath forms the CRDs' printer columns use: `.a.b.c` and `.a.list[?(@.key=='value')].field`.
 * Anything else yields undefined (an empty cell), never an error.
 */
export function evaluateJsonPath(object: unknown, path: string): unknown {
  let current: unknown = object;
  const steps = path.match(/\.[A-Za-z0-9_-]+|\[\?\(@\.[A-Za-z0-9_-]+==(?:'[^']*'|"[^"]*")\)\]/g) ?? [];
  if (steps.join('') !== path) return undefined;
  for (const step of steps) {
    if (current === undefined || current === null) return undefined;
    if (step.startsWith('.')) {
      current = typeof current === 'object' ? (current as Row)[step.slice(1)] : undefined;
      continue;
    }
    const [, key = '', quoted = ''] = /^\[\?\(@\.([A-Za-z0-9_-]+)==(.*)\)\]$/.exec(step) ?? [];
    const value = quoted.slice(1, -1);
    current = Array.isArray(current)
      ? current.find((entry) => typeof entry === 'object' && entry !== null && String((entry as Row)[key]) === value)
      : undefined;
  }
  return current;
}

function cellText(value: unknown, type: string, now: Date): string {
  if (value === undefined || value === null || value === '') return type === 'boolean' ? 'false' : '';
  if (type === 'date' && typeof value === 'string') return age(now.getTime() - Date.parse(value));
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** kubectl's age: 45s, 12m, 5h10m, 3d, 2y. */
export function age(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 === 0 ? '' : `${s % 60}s`}`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return `${h}h${m % 60 === 0 ? '' : `${m % 60}m`}`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 365 * 2) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}
