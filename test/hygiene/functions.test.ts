// No function longer than a reviewer can hold in mind: 150 lines of formatted code (Prettier's output, which
// `./pnpm lint` checks), tests apart. The longer ones are listed below, each with the reason it stays whole;
// a function that grows past the bound, or a listed one that no longer needs its place, fails this test.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const MAX_LINES = 150;

/**
 * The functions allowed past the bound (`file:name`), and why. A factory whose body is the closures it returns
 * over shared state reads as a module: splitting it would pass that state around as parameters.
 */
const ALLOWED: Readonly<Record<string, string>> = {
  'packages/render/src/helpers.ts:createHelpers': 'the table of Handlebars helpers: one short entry per helper over the shared argument checks',
  'packages/operator/src/metrics.ts:createMetrics': 'the table of metric definitions, one entry per series',
  'packages/source-git/src/source.ts:createGitSource': 'a factory: closures over the snapshot cache, the per-host gates and the sessions',
  'packages/kube/src/rest.ts:createKubeRest': 'a factory: closures over the connection pools, the write fence and the retry budget',
  'packages/operator/src/controller/drift-watches.ts:createDriftWatches': 'a factory: closures over the watches, their caches and the owner index',
  'packages/operator/src/controller/configsync-controller.ts:configSyncController':
    "a controller's declaration: closures over its caches, indexes and fresh-request bookkeeping",
  'packages/operator/src/mirror/controller.ts:mirrorController': "a controller's declaration: closures over mirroring's caches and replica index",
  'packages/notify/src/controller.ts:notificationsController': "a controller's declaration: closures over the providers', alerts' and delivery state",
  'packages/operator/src/reconcile/configsync.ts:reconcileTargets':
    'the targets in dependency order with the bookkeeping they share; each step is a function of its own',
  'packages/apply/src/execute.ts:executePlan': "the plan's phases in their order, each a function of its own, over the state they share",
  'test/support/src/oidc-issuer.ts:startOidcIssuer': 'a test OIDC issuer: its routes as closures over its keys and codes',
};

/** Every TypeScript source file of the packages, scripts and test support (tests and fixtures apart). */
function sources(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!['node_modules', 'dist', 'testdata', '.toolchain'].includes(entry.name)) sources(path, out);
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

type Long = { readonly id: string; readonly lines: number };

/** The named functions (declarations, methods, and functions assigned to a name) longer than MAX_LINES. */
function longFunctions(file: string): Long[] {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Long[] = [];
  const nameOf = (node: ts.Node): string => {
    if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name !== undefined) return node.name.getText(source);
    const parent = node.parent;
    if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText(source);
    return '(anonymous)';
  };
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node) || ts.isFunctionExpression(node)) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      if (last - first + 1 > MAX_LINES) found.push({ id: `${relative(root, file)}:${nameOf(node)}`, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('function length', () => {
  const long = ['packages', 'scripts', join('test', 'support', 'src')].flatMap((dir) => sources(join(root, dir))).flatMap(longFunctions);

  it(`keeps every function within ${MAX_LINES} lines, or lists why not`, () => {
    expect(long.filter((f) => ALLOWED[f.id] === undefined).map((f) => `${f.id} (${f.lines} lines)`)).toEqual([]);
  });

  it('lists only functions that still need their place', () => {
    const ids = new Set(long.map((f) => f.id));
    expect(Object.keys(ALLOWED).filter((id) => !ids.has(id))).toEqual([]);
  });
});
