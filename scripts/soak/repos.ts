// What the soak's repositories hold, generated deterministically and kept as a model, so the objects the
// cluster must end up with (names and data, per target namespace) are known without the operator's code.
// Each sync owns one directory: plain ConfigMaps (`cm-<k>.yaml`) that commits add, change and remove, and one
// Handlebars template whose output depends on the sync's values, the target's values and the target.
import { createHash } from 'node:crypto';

export type SoakTarget = { readonly name: string; readonly namespace: string; readonly tier: string };

export type SoakSync = {
  readonly name: string;
  /** Index into the repositories. */
  readonly repo: number;
  readonly path: string;
  readonly refreshInterval: string;
  readonly team: string;
  readonly targets: readonly SoakTarget[];
};

export type CommitChange = { added: number; changed: number; removed: number };

const refreshIntervals = ['5s', '10s', '15s', '30s'] as const;
const MAX_FILES = 8;

export class SoakRepos {
  readonly syncs: readonly SoakSync[];
  readonly #files: Map<number, number>[];
  readonly #removed: Set<number>[];
  readonly #nextFile: number[];
  readonly #settingsRevision: number[];
  readonly #random: () => number;
  #revision = 0;

  constructor(options: { syncs: number; repos: number; namespaces: readonly string[]; random: () => number }) {
    this.#random = options.random;
    const ns = (i: number): string => options.namespaces[i % options.namespaces.length] ?? 'default';
    this.syncs = Array.from({ length: options.syncs }, (_, i) => {
      const id = `s${String(i).padStart(2, '0')}`;
      return {
        name: id,
        repo: i % options.repos,
        path: `apps/${id}`,
        refreshInterval: refreshIntervals[i % refreshIntervals.length] ?? '10s',
        team: `team-${id}`,
        targets: [
          { name: 'main', namespace: ns(i), tier: 'base' },
          { name: 'canary', namespace: ns(i + 1), tier: 'canary' },
        ],
      };
    });
    this.#files = this.syncs.map(() => new Map<number, number>());
    this.#removed = this.syncs.map(() => new Set<number>());
    this.#nextFile = this.syncs.map(() => 0);
    this.#settingsRevision = this.syncs.map(() => 0);
  }

  /** The ConfigSync object for a sync, pointing at `repoUrl`. */
  configSync(sync: SoakSync, namespace: string, repoUrl: string): Record<string, unknown> {
    return {
      apiVersion: 'syncline.dev/v1alpha1',
      kind: 'ConfigSync',
      metadata: { name: sync.name, namespace },
      spec: {
        source: { git: { repo: repoUrl, revision: 'main', path: sync.path } },
        refreshInterval: sync.refreshInterval,
        values: { team: sync.team, tier: 'base' },
        targets: sync.targets.map((t) => ({ name: t.name, namespace: t.namespace, ...(t.tier === 'base' ? {} : { values: { tier: t.tier } }) })),
      },
    };
  }

  /** The first commit of one repository: three ConfigMaps and the template for each of its syncs. */
  initialCommit(repo: number): Record<string, string> {
    const files: Record<string, string> = {};
    this.#revision++;
    for (const [i, sync] of this.syncs.entries()) {
      if (sync.repo !== repo) continue;
      for (let n = 0; n < 3; n++) Object.assign(files, this.#add(i));
      Object.assign(files, this.#bumpSettings(i));
    }
    return files;
  }

  /** The next commit of one repository: one or two edits (add, change, remove, template) to one to three of its syncs. */
  nextCommit(repo: number): { files: Record<string, string | null>; change: CommitChange } {
    this.#revision++;
    const files: Record<string, string | null> = {};
    const change: CommitChange = { added: 0, changed: 0, removed: 0 };
    const mine = [...this.syncs.keys()].filter((i) => this.syncs[i]?.repo === repo);
    const touched = 1 + Math.floor(this.#random() * Math.min(3, mine.length));
    for (let t = 0; t < touched; t++) {
      const i = mine[Math.floor(this.#random() * mine.length)] ?? 0;
      const edits = 1 + Math.floor(this.#random() * 2);
      for (let e = 0; e < edits; e++) {
        const count = this.#files[i]?.size ?? 0;
        const options: Array<'add' | 'change' | 'remove' | 'settings'> = [];
        if (count < MAX_FILES) options.push('add');
        if (count > 0) options.push('change', 'change');
        if (count > 1) options.push('remove');
        options.push('settings');
        const op = options[Math.floor(this.#random() * options.length)] ?? 'settings';
        switch (op) {
          case 'add':
            Object.assign(files, this.#add(i));
            change.added++;
            break;
          case 'change':
            Object.assign(files, this.#change(i));
            change.changed++;
            break;
          case 'remove':
            Object.assign(files, this.#remove(i));
            change.removed++;
            break;
          case 'settings':
            Object.assign(files, this.#bumpSettings(i));
            change.changed++;
            break;
        }
      }
    }
    return { files, change };
  }

  /** Every object the cluster must hold now: namespace → ConfigMap name → data. */
  expected(): Map<string, Map<string, Record<string, string>>> {
    const byNamespace = new Map<string, Map<string, Record<string, string>>>();
    for (const [i, sync] of this.syncs.entries()) {
      for (const target of sync.targets) {
        const objects = byNamespace.get(target.namespace) ?? new Map<string, Record<string, string>>();
        byNamespace.set(target.namespace, objects);
        for (const [k, revision] of this.#files[i] ?? []) objects.set(`${sync.name}-cm-${k}`, configMapData(sync.name, k, revision));
        objects.set(`${sync.name}-settings`, {
          team: sync.team,
          tier: target.tier,
          target: target.name,
          namespace: target.namespace,
          revision: String(this.#settingsRevision[i] ?? 0),
        });
      }
    }
    return byNamespace;
  }

  #add(i: number): Record<string, string> {
    const removed = this.#removed[i] ?? new Set<number>();
    // Now and then a name that was pruned comes back: it must be created again.
    const reuse = removed.size > 0 && this.#random() < 0.3 ? [...removed][Math.floor(this.#random() * removed.size)] : undefined;
    const k = reuse ?? this.#nextFile[i] ?? 0;
    if (reuse === undefined) this.#nextFile[i] = k + 1;
    removed.delete(k);
    this.#files[i]?.set(k, this.#revision);
    return { [this.#filePath(i, k)]: configMapYaml(this.#name(i), k, this.#revision) };
  }

  #change(i: number): Record<string, string> {
    const keys = [...(this.#files[i]?.keys() ?? [])];
    const k = keys[Math.floor(this.#random() * keys.length)] ?? 0;
    this.#files[i]?.set(k, this.#revision);
    return { [this.#filePath(i, k)]: configMapYaml(this.#name(i), k, this.#revision) };
  }

  #remove(i: number): Record<string, null> {
    const keys = [...(this.#files[i]?.keys() ?? [])];
    const k = keys[Math.floor(this.#random() * keys.length)] ?? 0;
    this.#files[i]?.delete(k);
    this.#removed[i]?.add(k);
    return { [this.#filePath(i, k)]: null };
  }

  #bumpSettings(i: number): Record<string, string> {
    this.#settingsRevision[i] = this.#revision;
    const name = this.#name(i);
    const template = [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      `  name: ${name}-settings`,
      'data:',
      '  team: {{quote values.team}}',
      '  tier: {{quote values.tier}}',
      '  target: {{quote target.name}}',
      '  namespace: {{quote target.namespace}}',
      `  revision: "${this.#revision}"`,
      '',
    ].join('\n');
    return { [`${this.syncs[i]?.path ?? ''}/settings.yaml.hbs`]: template };
  }

  #name(i: number): string {
    return this.syncs[i]?.name ?? '';
  }

  #filePath(i: number, k: number): string {
    return `${this.syncs[i]?.path ?? ''}/cm-${k}.yaml`;
  }
}

function configMapData(sync: string, k: number, revision: number): Record<string, string> {
  return {
    sync,
    file: `cm-${k}`,
    revision: String(revision),
    payload: createHash('sha256').update(`${sync}/${k}/${revision}`).digest('hex'),
  };
}

function configMapYaml(sync: string, k: number, revision: number): string {
  const data = configMapData(sync, k, revision);
  const lines = [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    `  name: ${sync}-cm-${k}`,
    'data:',
    ...Object.entries(data).map(([key, value]) => `  ${key}: "${value}"`),
    '',
  ];
  return lines.join('\n');
}
