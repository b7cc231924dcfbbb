// Label-driven mirroring in the web UI: the rows `syncline status --mirrors` prints (source → target namespace,
// synced, stale, conflict with whom, …), as the operator's mirroring controller last saw them in its own
// watches. Names and states only: no Secret or ConfigMap data is in a row. A viewer sees a row when they may
// `list` that kind both where the source is and where the copy goes.
import type { Access, Viewer } from './auth.ts';
import type { UiMirrorRow } from './model.ts';

const RESOURCES: Record<string, string> = { Secret: 'secrets', ConfigMap: 'configmaps' };

export async function visibleMirrorRows(access: Access, viewer: Viewer, rows: readonly UiMirrorRow[]): Promise<UiMirrorRow[]> {
  const may = (kind: string, namespace: string): Promise<boolean> => {
    const resource = RESOURCES[kind];
    if (resource === undefined) return Promise.resolve(false);
    return access
      .allowedResource(viewer, { verb: 'list', group: '', resource, namespace: '' })
      .then((all) => all || (namespace !== '' && access.allowedResource(viewer, { verb: 'list', group: '', resource, namespace })));
  };
  const out: UiMirrorRow[] = [];
  for (const row of rows) {
    const sourceNamespace = row.source.split('/')[0] ?? '';
    if (!(await may(row.kind, sourceNamespace))) continue;
    if (row.namespace !== '' && !(await may(row.kind, row.namespace))) continue;
    out.push(row);
  }
  return out;
}
