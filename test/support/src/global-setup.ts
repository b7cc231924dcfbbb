// vitest global setup for the `integration` project: one shared control plane for the whole run, or the
// cluster named by SYNCLINE_TEST_KUBECONFIG when a user wants to test against their own.
import type { TestProject } from 'vitest/node';
import { startControlPlane } from './control-plane.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env['SYNCLINE_TEST_KUBECONFIG'];
  if (external !== undefined && external !== '') {
    project.provide('kubeconfig', external);
    return async () => {};
  }
  const started = Date.now();
  const controlPlane = await startControlPlane({ onProgress: (line) => console.log(`[control-plane] ${line}`) });
  console.log(`[control-plane] ready at ${controlPlane.server} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  project.provide('kubeconfig', controlPlane.kubeconfigPath);
  return () => controlPlane.stop();
}
