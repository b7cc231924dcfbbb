// vitest global setup for the `integration` project: one shared control plane for the whole run, or the
// cluster named by SYNCLINE_TEST_KUBECONFIG when a user wants to test against their own; then the forge
// tests' Gitea binary.
import type { TestProject } from 'vitest/node';
import { startControlPlane } from './control-plane.ts';
import { ensureGiteaBinary } from './gitea.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env['SYNCLINE_TEST_KUBECONFIG'];
  if (external !== undefined && external !== '') {
    project.provide('kubeconfig', external);
    await buildGitea();
    return async () => {};
  }
  const started = Date.now();
  const controlPlane = await startControlPlane({ onProgress: (line) => console.log(`[control-plane] ${line}`) });
  console.log(`[control-plane] ready at ${controlPlane.server} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  project.provide('kubeconfig', controlPlane.kubeconfigPath);
  await buildGitea();
  return () => controlPlane.stop();
}

/**
 * The forge tests' Gitea is built here, before any test file runs, so a cold build (minutes) neither counts
 * against a test's hook timeout nor competes for the CPU with running tests. When it cannot be built, the
 * tests that start Gitea fail with the reason; the others run.
 */
async function buildGitea(): Promise<void> {
  try {
    await ensureGiteaBinary({ onProgress: (line) => console.log(`[gitea] ${line}`) });
  } catch (error) {
    console.log(`[gitea] not built: ${error instanceof Error ? error.message : String(error)}`);
  }
}
