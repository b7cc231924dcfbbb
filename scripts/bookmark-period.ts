// `node scripts/bookmark-period.ts [--minutes 4]`: measures how often the test control plane's API server sends
// a bookmark to a watch that asked for them and has nothing else to say (the figure WATCH_FRESH_MS in
// packages/kube/src/rest.ts is built on). Label-selected watches that match nothing (ConfigMaps, Services,
// Deployments); the gaps between their bookmarks are printed.
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest } from '@syncline/operator';
import { startControlPlane } from '@syncline/test-support';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '4' } } });
const controlPlane = await startControlPlane();
try {
  const config = new KubeConfig();
  config.loadFromFile(controlPlane.kubeconfigPath);
  const rest = await createKubeRest(config, { watchIdleMs: 3_600_000 }); // silence is what is measured here
  // The watch cache sends bookmarks only once it has seen an event of the kind: one write of each.
  await rest.request({ method: 'POST', path: '/api/v1/namespaces/default/configmaps', body: { metadata: { name: 'bookmark-probe' } } });
  await rest.request({
    method: 'POST',
    path: '/api/v1/namespaces/default/services',
    body: { metadata: { name: 'bookmark-probe' }, spec: { ports: [{ port: 80 }] } },
  });
  // Each kind twice, the second watch opened 20 s after the first: when a watch opens matters for its first bookmark.
  const paths = ['/api/v1/configmaps', '/api/v1/services', '/apis/apps/v1/deployments'].flatMap((path) => [path, path]);
  const stop = AbortSignal.timeout(Number(values.minutes) * 60_000);
  const gaps = await Promise.all(
    paths.map(async (path, i) => {
      await new Promise((resolve) => setTimeout(resolve, (i % 2) * 20_000));
      const list = await rest.request<{ metadata: { resourceVersion: string } }>({ method: 'GET', path, query: { labelSelector: 'bookmark-probe=none' } });
      const opened = Date.now();
      const times: number[] = [];
      await rest.watch(
        path,
        { resourceVersion: list.metadata.resourceVersion, allowWatchBookmarks: true, labelSelector: 'bookmark-probe=none', timeoutSeconds: 3600 },
        (event) => {
          if ((event as { type?: string }).type === 'BOOKMARK') times.push(Date.now());
        },
        stop,
      );
      return { path, gaps: times.map((t, i) => ((t - (i === 0 ? opened : (times[i - 1] ?? opened))) / 1000).toFixed(1)) };
    }),
  );
  for (const { path, gaps: g } of gaps) console.log(`${path}: bookmarks after ${g.join(' s, ')} s (the first from the watch's start)`);
} finally {
  await controlPlane.stop();
}
