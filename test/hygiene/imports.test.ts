// The shape of the code, checked over the import graph of every TypeScript file in the repository (tests,
// scripts and the UI client included; type-only imports count, as they couple the files just the same):
// - no cycle between files: a cycle is a helper in the wrong room, and it makes the split into packages
//   that dependencies point one way impossible;
// - a package is entered through its entry points only (its package.json `exports`, e.g. src/index.ts),
//   never through another file of its own, whether by package name or by a relative path.
// - dependencies between packages point one way: a package's files (its tests included) import only the workspace
//   packages its package.json declares, the declared graph has no cycle, and the split packages declare no more
//   than their place in the layering allows (LAYERS below);
// The graph comes from TypeScript's own scanner (ts.preProcessFile): static and dynamic imports, re-exports.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

/**
 * Deep imports allowed, each with its reason:
 * - the operator's benchmark helpers (packages/operator/bench, not part of the package's source) are shared with
 *   the soak script, which drives the same kinds at scale;
 * - the release bundles the standalone CLI from the same entry points as the CLI package's bin/syncline.js (the
 *   CLI, and the operator loaded only for `run`), and reads the CLI's version text.
 */
const ALLOWED_DEEP_IMPORTS: ReadonlyArray<{ readonly from: RegExp; readonly to: RegExp }> = [
  { from: /^scripts\//, to: /^packages\/operator\/bench\/_[a-z-]+\.ts$/ },
  { from: /^scripts\/release(-sea-main)?\.ts$/, to: /^packages\/cli\/src\/(cli|main)\.ts$/ },
];

/**
 * The layering of the packages split out of the operator, lowest first: each may declare (and so import) only the
 * workspace packages listed for it, test-support aside (a test-only package every layer may use in its tests).
 * The API is the bottom (zod only); the runtime is generic over the kind; the operator and notifications build on
 * both; the web UI and the CLI are clients; the `syncline` binary composes them. The binary lives in the CLI
 * package (bin/syncline.js, src/main.ts), so the CLI may declare the web UI; the web UI never declares the CLI.
 */
const LAYERS: Readonly<Record<string, readonly string[]>> = {
  '@syncline/api': [],
  '@syncline/runtime': ['@syncline/api', '@syncline/kube'],
  '@syncline/operator': [
    '@syncline/runtime',
    '@syncline/api',
    '@syncline/apply',
    '@syncline/kube',
    '@syncline/render',
    '@syncline/source-git',
    '@syncline/source-helm',
  ],
  '@syncline/notify': ['@syncline/runtime', '@syncline/api', '@syncline/kube', '@syncline/render', '@syncline/source-git'],
  '@syncline/ui': ['@syncline/api', '@syncline/apply', '@syncline/kube', '@syncline/operator', '@syncline/render', '@syncline/source-git'],
  '@syncline/cli': [
    '@syncline/ui',
    '@syncline/notify',
    '@syncline/api',
    '@syncline/apply',
    '@syncline/kube',
    '@syncline/operator',
    '@syncline/render',
    '@syncline/source-git',
    '@syncline/source-helm',
  ],
};

type Workspace = {
  readonly name: string;
  readonly dir: string;
  readonly entries: ReadonlyMap<string, string>;
  /** The workspace packages its package.json declares, in dependencies or devDependencies. */
  readonly declared: readonly string[];
};

/** Every workspace package: its name, its directory and its entry points (subpath → file). */
function workspaces(): Workspace[] {
  const dirs = [...readdirSync(join(root, 'packages')).map((d) => join('packages', d)), join('test', 'support')];
  return dirs.map((dir) => {
    type Manifest = {
      name: string;
      exports: Record<string, { default: string }>;
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
    const manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as Manifest;
    const entries = new Map(Object.entries(manifest.exports).map(([subpath, target]) => [subpath, join(dir, target.default)]));
    const declared = Object.entries({ ...manifest.dependencies, ...manifest.devDependencies })
      .filter(([, range]) => range.startsWith('workspace:'))
      .map(([name]) => name);
    return { name: manifest.name, dir, entries, declared };
  });
}

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!['node_modules', 'testdata', 'dist', '.toolchain'].includes(entry.name) && !entry.name.startsWith('.')) sourceFiles(path, out);
    } else if (/\.(ts|tsx)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

type Edge = { readonly from: string; readonly to: string; readonly specifier: string };

/** Every import between repository files, resolved to repository-relative paths. */
function importGraph(files: readonly string[], packages: readonly Workspace[]): Edge[] {
  const edges: Edge[] = [];
  for (const from of files) {
    const info = ts.preProcessFile(readFileSync(join(root, from), 'utf8'), true, true);
    for (const { fileName: specifier } of info.importedFiles) {
      let to: string | undefined;
      if (specifier.startsWith('.')) to = relative(root, resolve(root, dirname(from), specifier));
      else {
        const owner = packages.find((p) => specifier === p.name || specifier.startsWith(`${p.name}/`));
        if (owner !== undefined) to = owner.entries.get(`.${specifier.slice(owner.name.length)}`) ?? join(owner.dir, specifier.slice(owner.name.length + 1));
      }
      if (to !== undefined) edges.push({ from, to, specifier });
    }
  }
  return edges;
}

/** Each cycle once, as the files along it (Tarjan's strongly connected components, then one path through each). */
function cycles(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) ?? 0);
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(to) ?? 0));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node) ?? 0, index.get(to) ?? 0));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      component.push(member);
      if (member === node) break;
    }
    if (component.length > 1 || (next.get(node) ?? []).includes(node)) components.push(component.sort());
  };
  for (const node of next.keys()) if (!index.has(node)) visit(node);
  return components;
}

describe('the import graph', () => {
  const packages = workspaces();
  const files = ['packages', 'test', 'scripts'].flatMap((dir) => sourceFiles(dir));
  const edges = importGraph(files, packages);

  it('reads the whole repository (a sanity check on the walk itself)', () => {
    expect(files.length).toBeGreaterThan(300);
    expect(edges.some((e) => e.from === 'packages/operator/src/main.ts' && e.to === 'packages/kube/src/index.ts')).toBe(true);
  });

  it('has no cycle between files', () => {
    expect(cycles(edges)).toEqual([]);
  });

  it('enters every package through its entry points only, whether by name or by a relative path', () => {
    const entryFiles = new Set(packages.flatMap((p) => [...p.entries.values()]));
    const packageOf = (file: string): Workspace | undefined => packages.find((p) => file.startsWith(`${p.dir}/`));
    const reaching = edges.filter((e) => {
      const target = packageOf(e.to);
      if (target === undefined || target === packageOf(e.from) || entryFiles.has(e.to)) return false;
      return !ALLOWED_DEEP_IMPORTS.some((allowed) => allowed.from.test(e.from) && allowed.to.test(e.to));
    });
    expect(reaching.map((e) => `${e.from} imports ${e.specifier}`)).toEqual([]);
  });

  it('points dependencies between packages one way: each file imports only packages its own declares', () => {
    const packageOf = (file: string): Workspace | undefined => packages.find((p) => file.startsWith(`${p.dir}/`));
    const undeclared = edges.filter((e) => {
      const [from, to] = [packageOf(e.from), packageOf(e.to)];
      // test-support is test-only and at the bottom of every layer (the root package.json declares it for all tests and benchmarks).
      if (to?.name === '@syncline/test-support' && /(\.test\.ts$|\/bench\/)/.test(e.from)) return false;
      return from !== undefined && to !== undefined && from !== to && !from.declared.includes(to.name);
    });
    expect(undeclared.map((e) => `${e.from} imports ${e.specifier}, which ${packageOf(e.from)?.name} does not declare`)).toEqual([]);
  });

  it('has no cycle between the packages as declared', () => {
    const declaredEdges = packages.flatMap((p) => p.declared.map((to) => ({ from: p.name, to, specifier: to })));
    expect(cycles(declaredEdges)).toEqual([]);
  });

  it('keeps the split packages in their layers: none declares a package above it', () => {
    const beyond = packages.flatMap((p) => {
      const allowed = LAYERS[p.name];
      if (allowed === undefined) return [];
      return p.declared.filter((d) => d !== '@syncline/test-support' && !allowed.includes(d)).map((d) => `${p.name} depends on ${d}`);
    });
    expect(beyond).toEqual([]);
    expect(Object.keys(LAYERS).filter((name) => !packages.some((p) => p.name === name))).toEqual([]);
  });
});
