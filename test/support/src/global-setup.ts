// vitest global setup for the `integration` project: one shared control plane for the whole run, or the
// cluster named by SYNCLINE_TEST_KUBECONFIG when a user wants to test against their own; then the forge
// tests' Gitea binary, when the run selected a test that starts Gitea. Every other tool (KWOK, the registry,
// vault-transit, …) is built by the first test that needs it, in its beforeAll.
import { isAbsolute, join, relative } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startControlPlane } from './control-plane.ts';
import { ensureHelm, ensureJsonnet, ensureKustomize } from './engine-tools.ts';
import { ensureGiteaBinary } from './gitea.ts';
import { ensureGoTool } from './go-tool.ts';
import { ensureKwok } from './kwok.ts';
import { LOCAL_KMS_TOOL } from './local-kms.ts';
import { ensureRegistry } from './chart-servers.ts';
import { ensureRenderEngine } from './render-engine.ts';
import { SOPS_TOOL } from './sops.ts';
import { ensureVaultTransit } from './vault.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const downloads = selectsAll(project) ? downloadToolModules() : Promise.resolve();
  const external = process.env['SYNCLINE_TEST_KUBECONFIG'];
  if (external !== undefined && external !== '') {
    project.provide('kubeconfig', external);
    if (needsGitea(project)) await buildGitea();
    return () => downloads;
  }
  const started = Date.now();
  const controlPlane = await startControlPlane({ onProgress: (line) => console.log(`[control-plane] ${line}`) });
  console.log(`[control-plane] ready at ${controlPlane.server} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  project.provide('kubeconfig', controlPlane.kubeconfigPath);
  if (needsGitea(project)) await buildGitea();
  return async () => {
    await downloads;
    await controlPlane.stop();
  };
}

/**
 * On a run of every test, the Go modules of the tools the tests build (hundreds of MB on a cold machine) are
 * downloaded while the control plane compiles: network beside CPU. Nothing is compiled here: each tool is still
 * built by the first test that needs it, one build at a time under the lock, and finds its modules in the
 * module cache. A download that fails here is retried by the tool's own build. Sequential, in the order the
 * run needs them; a warm cache answers each in about a second.
 */
async function downloadToolModules(): Promise<void> {
  const say = (line: string): void => console.log(`[modules] ${line}`);
  // Each returns at once when its binary is cached: a warm run downloads nothing and runs no go command.
  const options = { downloadOnly: true, onProgress: say };
  const downloads: readonly (() => Promise<unknown>)[] = [
    () => ensureGiteaBinary(options),
    () => ensureRenderEngine(options),
    () => ensureKustomize(options),
    () => ensureJsonnet(options),
    () => ensureHelm(options),
    () => ensureGoTool(SOPS_TOOL, options),
    () => ensureGoTool(LOCAL_KMS_TOOL, options),
    () => ensureVaultTransit(options),
    () => ensureRegistry(options),
    () => ensureKwok(options),
  ];
  for (const download of downloads) {
    await download().catch((error: unknown) => say(`not downloaded ahead: ${error instanceof Error ? error.message : String(error)}`));
  }
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

/** Whether the run has no file filters: every test file runs (and every tool's modules are downloaded ahead). */
export function selectsAll(project: Pick<TestProject, 'vitest'>): boolean {
  const filters = (project.vitest as { filenamePattern?: readonly string[] }).filenamePattern;
  return filters === undefined || filters.length === 0;
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
