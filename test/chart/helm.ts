// Helm for the chart tests: built from its official Go module by test support (ensureGoTool, cached per
// version and build flags), run with a throwaway home.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
export { ensureHelm, HELM_VERSION } from '@syncline/test-support';

export type HelmResult = { status: number | null; stdout: string; stderr: string };

/** Runs helm with an empty, throwaway home so no user config or repository cache leaks in. */
export function runHelm(binary: string, args: readonly string[], home: string): HelmResult {
  const result = spawnSync(binary, [...args], {
    encoding: 'utf8',
    // HOME too: without it the Kubernetes client keeps its discovery cache in ./.kube of the working directory.
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
