// vitest global setup for the `integration` project: one shared control plane for the whole run, or the
// cluster named by SYNCLINE_TEST_KUBECONFIG when a user wants to test against their own; then the forge
// tests' Gitea binary, when the run selected a test that starts Gitea. Every other tool (KWOK, the registry,
// vault-transit, …) is built by the first test that needs it, in its beforeAll.
import { isAbsolute, join, relative } from 'node:path';
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
    if (needsGitea(project)) await buildGitea();
    return async () => {};
  }
  const started = Date.now();
  const controlPlane = await startControlPlane({ onProgress: (line) => console.log(`[control-plane] ${line}`) });
  console.log(`[control-plane] ready at ${controlPlane.server} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  project.provide('kubeconfig', controlPlane.kubeconfigPath);
  if (needsGitea(project)) await buildGitea();
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

/** The test files that start Gitea (startGitea): a run that selects none of them does not build it. */
const GITEA_TESTS = ['test/e2e/gitea.int.test.ts'];

/**
 * Whether the run's file filters (`vitest run a b`: each a part of a path) select a file that starts Gitea.
 * No filter selects every file.
 */
export function needsGitea(project: Pick<TestProject, 'vitest'> & { config: { root: string } }): boolean {
  return selects(project, GITEA_TESTS);
}

/** Whether the run's file filters select one of `files`. */
function selects(project: Pick<TestProject, 'vitest'> & { config: { root: string } }, files: readonly string[]): boolean {
  const filters = (project.vitest as { filenamePattern?: readonly string[] }).filenamePattern;
  if (filters === undefined || filters.length === 0) return true;
  const root = project.config.root;
  return files.some((file) =>
    filters.some((filter) => {
      const relativeFilter = isAbsolute(filter) ? relative(root, filter) : filter;
      return join(root, file).includes(filter) || file.includes(relativeFilter.replace(/^\.\//, ''));
    }),
  );
}
