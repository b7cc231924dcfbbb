// A ConfigSync's objects against Git (what `syncline diff` shows, with each object's health) and the difference
// between two deploys of its history, computed on request with the operator's Git cache and its own client,
// by the same code as `syncline diff` (the operator's diff/sync-diff.ts): Secret values are masked there, on both sides.
// One computation per sync at a time, and its answer is reused for a few seconds: ten viewers opening the same
// page cost one render.
import type { ApplyClient } from '@syncline/apply';
import type { KubeObject, KubeRest } from '@syncline/kube';
import { isRenderError, type RenderEngine } from '@syncline/render';
import type { GitSource } from '@syncline/source-git';
import type { ConfigSync } from '@syncline/api';
import { diffRenders, diffSync, readSource, renderSync } from '@syncline/operator/client';
import { StallError } from '@syncline/operator/client';
import type { UiDeployDiff, UiSyncDiff } from './model.ts';

export type DiffSource = {
  git: GitSource;
  client: () => Promise<ApplyClient>;
  /** The Kustomize, Helm and Jsonnet render process, for syncs that need it. */ engine?: RenderEngine | undefined;
};

/** May the viewer `get` this object? Each object's diff is shown only to a viewer who could read it anyway. */
export type MayGet = (ref: { group: string; resource: string; namespace: string; name: string }) => Promise<boolean>;

export type SyncDiffs = {
  live(object: KubeObject, mayGet: MayGet): Promise<UiSyncDiff>;
  deploys(object: KubeObject, range: { from: string; to: string }, mayGet: MayGet): Promise<UiDeployDiff>;
};

/** A failure the viewer may read: a render error (file:line:column), a missing Secret named by the spec. */
export class DiffError extends Error {}

const REUSE_MS = 5_000;
const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

export function createSyncDiffs(options: { rest: KubeRest; source: DiffSource; now?: () => number }): SyncDiffs {
  const now = options.now ?? Date.now;
  const recent = new Map<string, { at: number; answer: Promise<unknown> }>();
  // Diffs of one sync one after the other; a second request while one runs gets the same answer.
  const once = <T>(key: string, compute: () => Promise<T>): Promise<T> => {
    for (const [k, v] of recent) if (now() - v.at > REUSE_MS) recent.delete(k);
    const hit = recent.get(key);
    if (hit !== undefined) return hit.answer as Promise<T>;
    const answer = compute().catch((error: unknown) => {
      recent.delete(key);
      throw isRenderError(error) ? new DiffError(`render failed: ${error.message}`) : error instanceof StallError ? new DiffError(error.message) : error;
    });
    recent.set(key, { at: now(), answer });
    return answer;
  };
  /** The diff text of objects the viewer may not `get` is dropped (with a note saying so); the rest is kept. */
  const readable = async (label: string, mayGet: MayGet): Promise<boolean> => {
    const parts = label.split('/');
    const [group = '', kind = ''] = parts;
    const namespace = parts.length === 4 ? (parts[2] ?? '') : '';
    const name = parts.at(-1) ?? '';
    const info = (await (await options.source.client()).discovery()).preferred(group === 'core' ? '' : group, kind);
    return info !== undefined && mayGet({ group: info.group, resource: info.plural, namespace, name });
  };
  const keyOf = (object: KubeObject): string => `${object.metadata.namespace ?? ''}/${object.metadata.name}/${object.metadata.resourceVersion ?? ''}`;
  return {
    async live(object, mayGet) {
      const shared = await once(`live/${keyOf(object)}`, async () => {
        const sync = object as unknown as ConfigSync;
        const source = await readSource({ rest: options.rest, git: options.source.git, object: sync });
        const targets = await diffSync({ rest: options.rest, client: await options.source.client(), object: sync, source, engine: options.source.engine });
        return { revision: source.revision, targets };
      });
      const targets = [];
      for (const target of shared.targets) {
        const objects = [];
        for (const o of target.objects)
          objects.push(
            o.diff === '' || (await readable(o.label, mayGet))
              ? o
              : { ...o, diff: '', note: `${o.note === undefined ? '' : `${o.note}; `}diff not shown: you may not get this object` },
          );
        targets.push({ ...target, objects });
      }
      return { ...shared, targets };
    },
    async deploys(object, { from, to }, mayGet) {
      const history = ((object['status'] as { history?: { revision?: string }[] } | undefined)?.history ?? []).map((h) => h.revision);
      for (const revision of [from, to]) {
        if (!SHA.test(revision) || !history.includes(revision))
          throw new DiffError(`${revision} is not a deploy in the history of ${object.metadata.namespace ?? ''}/${object.metadata.name}`);
      }
      const shared = await once(`deploys/${keyOf(object)}/${from}/${to}`, async () => {
        const sync = object as unknown as ConfigSync;
        const discovery = await (await options.source.client()).discovery();
        const render = async (revision: string): ReturnType<typeof renderSync> =>
          renderSync({
            rest: options.rest,
            object: sync,
            discovery,
            engine: options.source.engine,
            source: await readSource({ rest: options.rest, git: options.source.git, object: sync, revision }),
          });
        const [a, b] = [await render(from), await render(to)];
        return { from, to, objects: diffRenders(a, b, { from: from.slice(0, 12), to: to.slice(0, 12) }) };
      });
      // A render may carry values from valuesFrom Secrets into other objects: each object's diff only for a
      // viewer who may read that object.
      const objects = [];
      for (const o of shared.objects) objects.push((await readable(o.label, mayGet)) ? o : { ...o, diff: `(not shown: you may not get ${o.label})\n` });
      return { ...shared, objects };
    },
  };
}
