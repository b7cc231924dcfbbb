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
  generation?: number;
  observedGeneration?: number;
  suspended: boolean;
  conditions: UiCondition[];
  /** Where it comes from: a Git source for a ConfigSync, the source object of a ManifestSync, and so on. */
  source: Record<string, string>;
  /** Per-target (or per-copy) lines. */
  targets: { name: string; cluster?: string; namespace?: string; phase?: string; objects?: number; message?: string; health?: string }[];
  /** Deploys, newest first (ConfigSync only). */
  history: { revision: string; appliedAt?: string; objects?: number; digest?: string }[];
  /** Kind-specific facts worth a line (a RemoteCluster's version, a replication's lag). */
  facts: Record<string, string>;
};

