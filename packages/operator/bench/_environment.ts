// What the operator benchmarks share: their own control plane (beside any test run's), a Git server,
// a REST client, the CRDs and one namespace. Dispose it with `await using`.
import { KubeConfig } from '@kubernetes/client-node';
import { createKubeRest, installCrds, type KubeRest } from '@syncline/operator';
import { startControlPlane, startGitServer, type ControlPlane, type GitServer } from '@syncline/test-support';

export type BenchEnvironment = {
  readonly controlPlane: ControlPlane;
  readonly git: GitServer;
  readonly rest: KubeRest;
  [Symbol.asyncDispose](): Promise<void>;
};

export async function benchEnvironment(namespace: string): Promise<BenchEnvironment> {
  const controlPlane = await startControlPlane({ onProgress: (line) => console.error(`[control-plane] ${line}`) });
  const git = await startGitServer();
  const kc = new KubeConfig();
  kc.loadFromFile(controlPlane.kubeconfigPath);
  const rest = await createKubeRest(kc);
  await installCrds(rest, { fieldManager: 'bench' });
  await rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: namespace } } });
  return {
    controlPlane,
    git,
    rest,
    async [Symbol.asyncDispose]() {
      await git.close();
      await controlPlane.stop();
    },
  };
}
