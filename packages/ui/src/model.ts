// What the web UI's server sends the page (shared by both; no imports, so the page's build and typecheck stay
// apart from the operator's Node code).
export type UiKind = 'ConfigSync' | 'ManifestSync' | 'NamespaceReplication' | 'RemoteCluster';

export const UiState = { Ready: 'ready', Progressing: 'progressing', Failed: 'failed', Suspended: 'suspended' } as const;
export type UiState = (typeof UiState)[keyof typeof UiState];

export type UiCondition = { type: string; status: string; reason: string; message: string; lastTransitionTime?: string };

export type UiObject = {
  /** `Kind/namespace/name`: unique across kinds. */
  key: string;
  kind: UiKind;
  namespace: string;
  name: string;
  state: UiState;
  /** The Ready condition's message, or why the state is what it is. */
  summary: string;
  createdAt?: string;
  /** metadata.labels (the overview filters on them); annotations are never sent. */
  labels?: Record<string, string>;
  generation?: number;
  observedGeneration?: number;
  suspended: boolean;
  /** Live objects differ from what was applied (Synced=False, DriftDetected; drift: Report leaves it so). */
  drifted: boolean;
  /** Why it needs a person, when it does (failed, stalled, a conflict, DR lag, an unreachable cluster). */
  attention?: string;
  conditions: UiCondition[];
  /** Where it comes from: a Git source for a ConfigSync, the source object of a ManifestSync, and so on. */
  source: Record<string, string>;
  /** Per-target (or per-copy) lines. */
  targets: {
    name: string;
    cluster?: string;
    namespace?: string;
    phase?: string;
    objects?: number;
    message?: string;
    health?: string;
    reason?: string;
    lastSyncedTime?: string;
  }[];
  /** Deploys, newest first (ConfigSync only). */
  history: { revision: string; appliedAt?: string; objects?: number; digest?: string }[];
  /** Kind-specific facts worth a line (a RemoteCluster's version, a replication's lag). */
  facts: Record<string, string>;
  /** Only what the overview shows (the snapshot's form): the object's page asks for the rest. */
  brief?: true;
};

/** The fields of a brief object (the overview's); the others are empty in it. */
export const BRIEF_FIELDS = ['key', 'kind', 'namespace', 'name', 'state', 'summary', 'labels', 'suspended', 'drifted', 'attention'] as const;

/** An Event this operator recorded (the overview's recent activity). */
export type UiActivity = { id: number; at: string; kind: UiKind; namespace: string; name: string; type: 'Normal' | 'Warning'; reason: string; message: string };

/** A ConfigSync's objects against Git (what `syncline diff` shows), with their health. */
export type UiObjectDiff = {
  label: string;
  change: 'in-sync' | 'drifted' | 'missing' | 'prune' | 'note';
  diff: string;
  note?: string;
  health?: string;
  healthMessage?: string;
};
export type UiSyncDiff = {
  revision: string;
  targets: { name: string; cluster?: string; skipped?: string; blocked?: string; engine?: string; objects: UiObjectDiff[] }[];
};
/** What changed between two deploys of the history. */
export type UiDeployDiff = { from: string; to: string; objects: { target: string; label: string; diff: string }[] };

/** One (source, target namespace) of label-driven mirroring, as `syncline status --mirrors` prints it. */
export type UiMirrorRow = { kind: string; source: string; namespace: string; state: string; message?: string };

/** A deploy's commit: what its author wrote (shown as text, never as HTML). */
export type UiCommit = { subject: string; message: string; author: string; email: string; time: string };

/** One object of a resource tree: its health (kstatus words), latest Events, and what it owns. */
export type UiTreeNode = {
  kind: string;
  namespace: string;
  name: string;
  health: string;
  healthMessage: string;
  events: { type: string; reason: string; message: string; count: number; at: string }[];
  children: UiTreeNode[];
};
/**
 * One hook of a target's last hooked commit, from status.targets[].hooks: when it runs, its phase, duration and
 * message, and its live object (a Job with its Pods) when it still exists, is the one the sync created (same
 * uid) and the viewer may get it.
 */
export type UiTreeHook = {
  hook: string;
  kind: string;
  namespace: string;
  name: string;
  phase: string;
  duration?: string;
  message?: string;
  startedAt?: string;
  node?: UiTreeNode;
};
/**
 * A ConfigSync's targets, each with the objects it applied as roots; `hidden` counts those the viewer may not get.
 * `hooks` are the hooks of the commit in `hooksRevision`.
 */
export type UiTree = {
  targets: {
    name: string;
    namespace?: string;
    cluster?: string;
    skipped?: string;
    nodes: UiTreeNode[];
    hidden: number;
    hooksRevision?: string;
    hooks?: UiTreeHook[];
  }[];
};
