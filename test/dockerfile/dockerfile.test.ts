// The Dockerfile's install steps, exercised without a Docker engine: the tree .dockerignore lets into the
// build context is copied aside, scripts/install-production.sh (the script the Dockerfile RUNs) installs
// into it, and the CLI must start from it with production dependencies only.
import { spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative, sep } from 'node:path';
import { OPERATOR_NODE_FLAGS } from '@syncline/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

/** .dockerignore rules in order; the last one that matches a path or one of its parents decides. */
async function readDockerignore(): Promise<{ pattern: string; exclude: boolean }[]> {
  const lines = (await readFile(join(root, '.dockerignore'), 'utf8')).split('\n').map((l) => l.trim());
  return lines.filter((l) => l !== '' && !l.startsWith('#')).map((l) => (l.startsWith('!') ? { pattern: l.slice(1), exclude: false } : { pattern: l, exclude: true }));
}

/** Docker's matching (Go's filepath.Match plus `**`): unlike shell globs, `*` matches dotfiles too. */
function matchesPattern(path: string, pattern: string): boolean {
  const tokens: Record<string, string> = { '**/': '(?:.*/)?', '**': '.*', '*': '[^/]*', '?': '[^/]' };
  const source = pattern
    .split(/(\*\*\/|\*\*|\*|\?)/)
    .map((part) => tokens[part] ?? part.replace(/[.+^${}()|[\]\\]/g, '\\$&'))
    .join('');
  return new RegExp(`^${source}$`).test(path);
}

function excluded(path: string, rules: readonly { pattern: string; exclude: boolean }[]): boolean {
  const parts = path.split('/');
  const ancestors = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let result = false;
  for (const rule of rules) if (ancestors.some((a) => matchesPattern(a, rule.pattern))) result = rule.exclude;
  return result;
}

/** The Docker build context: every file of the checkout that .dockerignore lets through. */
async function copyBuildContext(to: string): Promise<string[]> {
  const rules = await readDockerignore();
  const copied: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      const path = relative(root, full).split(sep).join('/');
      if (entry.isDirectory()) {
        // A directory excluded with no exception below it is skipped whole (node_modules, .git).
        if (excluded(path, rules) && !rules.some((r) => !r.exclude && r.pattern.startsWith(`${path}/`))) continue;
        await walk(full);
      } else if (entry.isFile() && !excluded(path, rules)) {
        await cp(full, join(to, path), { preserveTimestamps: true });
        copied.push(path);
      }
    }
  };
  await walk(root);
  return copied.sort();
}

function pnpmBinary(): string {
  const local = join(root, '.toolchain', 'node_modules', '.bin', 'pnpm');
  return existsSync(local) ? local : 'pnpm';
}

describe('Dockerfile', () => {
  let work: string;
  let context: string[];
  let install: ReturnType<typeof spawnSync>;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'syncline-image-'));
    context = await copyBuildContext(work);
    // The machine's pnpm store already holds every package (the checkout was installed from it), so the
    // install runs offline, as the image's does after `pnpm fetch`.
    const store = spawnSync(pnpmBinary(), ['store', 'path'], { cwd: root, encoding: 'utf8' }).stdout.trim();
    const pnpmDir = join(pnpmBinary(), '..');
    install = spawnSync('bash', [join(work, 'scripts', 'install-production.sh'), work, '--offline', '--store-dir', store], {
      encoding: 'utf8',
      // Node 24 (this process) and pnpm first on PATH, as in the image.
      env: { ...process.env, PATH: [join(process.execPath, '..'), pnpmDir, process.env['PATH'] ?? ''].join(':') },
      timeout: 120_000,
    });
  }, 150_000);
  afterAll(async () => {
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  it('builds from a context with sources and manifests only', () => {
    expect(context).toEqual(expect.arrayContaining(['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', 'scripts/install-production.sh', 'packages/operator/src/main.ts', 'packages/operator/bin/syncline.js']));
    const unwanted = context.filter((p) => /(^|\/)node_modules\//.test(p) || /^(\.git|\.toolchain|test|docs|examples|charts)\//.test(p));
    expect(unwanted).toEqual([]);
  });

  it('installs with scripts/install-production.sh, the same script the Dockerfile runs', async () => {
    const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM node:\$\{NODE_VERSION\}\S* AS build$/m);
    expect(dockerfile).toMatch(/^ARG NODE_VERSION=24\./m);
    expect(dockerfile).toMatch(/^RUN scripts\/install-production\.sh \/app/m);
    expect(dockerfile).toMatch(/^USER 1000:1000$/m);
    expect(dockerfile).toMatch(/^RUN ln -s \/app\/packages\/operator\/bin\/syncline\.js \/usr\/local\/bin\/syncline$/m);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["syncline"\]$/m);
    expect(dockerfile).toMatch(/^CMD \["run"/m);
    expect(install.stderr).not.toMatch(/ERR_PNPM/);
    expect(install.status).toBe(0);
  });

  it('runs the CLI from the installed tree', () => {
    // given the installed tree, when `syncline --help` runs from it, then it prints the usage
    const help = spawnSync(process.execPath, ['packages/operator/bin/syncline.js', '--help'], { cwd: work, encoding: 'utf8' });
    expect(help.stderr).toBe('');
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^ {2}run \[options\]\s+run the operator$/m);
  });

  it('runs `syncline` from PATH through the link the Dockerfile makes (the image\'s ENTRYPOINT)', async () => {
    // given the Dockerfile's link on a PATH, when `syncline --version` runs, then the bin answers
    const bin = join(work, 'usr-local-bin');
    await mkdir(bin);
    await symlink(join(work, 'packages/operator/bin/syncline.js'), join(bin, 'syncline'));
    const version = spawnSync('syncline', ['--version'], { cwd: tmpdir(), encoding: 'utf8', env: { ...process.env, PATH: [bin, dirname(process.execPath), process.env['PATH'] ?? ''].join(delimiter) } });
    expect(version.stderr).toBe('');
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/^syncline \d+\.\d+\.\d+/);
  });

  it('renders templates from the installed tree (Handlebars and YAML load at runtime)', async () => {
    await mkdir(join(work, 'probe'));
    await writeFile(join(work, 'probe', 'cm.yaml.hbs'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{values.name}}\ndata:\n  env: {{quote target.name}}\n');
    const render = spawnSync(process.execPath, ['packages/operator/src/main.ts', 'render', 'probe/cm.yaml.hbs', '--set', 'name=probe', '--target', 'prod'], { cwd: work, encoding: 'utf8' });
    expect(render.stderr).toBe('');
    expect(render.stdout).toContain('name: probe');
    expect(render.stdout).toContain('env: prod');
  });

  it('runs the operator with the Node flags the tests and benchmarks start it with, which Node takes from NODE_OPTIONS', async () => {
    const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
    const options = /^ENV NODE_OPTIONS=(.+)$/m.exec(dockerfile)?.[1];
    expect(options).toBe(OPERATOR_NODE_FLAGS.join(' '));
    const node = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.execArgv.length))'], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: options } });
    expect(node.stderr).toBe('');
    expect(node.status).toBe(0);
  });

  it('holds production dependencies only, and no tests or benchmarks', async () => {
    const installed = await readdir(join(work, 'node_modules', '.pnpm'));
    for (const dev of ['vitest', 'typescript', 'eslint', 'fast-check']) expect(installed.filter((name) => name.startsWith(`${dev}@`)), dev).toEqual([]);
    expect(installed.some((name) => name.startsWith('ssh2@'))).toBe(true);
    const leftovers = (await readdir(join(work, 'packages'), { recursive: true })).filter((p) => !p.includes('node_modules') && /(\.test\.ts$|(^|\/)(bench|testdata)(\/|$))/.test(p));
    expect(leftovers).toEqual([]);
  });
});
