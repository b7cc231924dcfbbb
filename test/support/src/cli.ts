// `pnpm control-plane [--once]`: starts the real test control plane and prints how to use it; with
// --once it checks the control plane answers and exits (non-zero on any failure).
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { startControlPlane } from './control-plane.ts';

const once = process.argv.includes('--once');
const started = Date.now();
const controlPlane = await startControlPlane({ onProgress: (line) => console.error(`  … ${line}`) });
const seconds = ((Date.now() - started) / 1000).toFixed(1);

try {
  const kc = new KubeConfig();
  kc.loadFromFile(controlPlane.kubeconfigPath);
  const namespaces = await kc.makeApiClient(CoreV1Api).listNamespace();
  console.log(`control plane ready in ${seconds}s at ${controlPlane.server}; namespaces: ${namespaces.items.map((n) => n.metadata?.name).join(', ')}`);
} catch (error) {
  console.error('the control plane started but does not answer:', error);
  await controlPlane.stop();
  process.exit(1);
}

if (once) {
  await controlPlane.stop();
  console.log('control plane stopped cleanly');
} else {
  console.log(`
  export KUBECONFIG=${controlPlane.kubeconfigPath}
  kubectl get namespaces                       # as the admin identity
  kubectl --context restricted get pods        # as the restricted identity (RBAC applies)

  Logs: ${controlPlane.logPath}
  Ctrl-C stops it and removes its data.`);
  const shutdown = (): void => {
    void controlPlane.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}
