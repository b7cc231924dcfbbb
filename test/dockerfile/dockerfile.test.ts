// The Dockerfile's install steps, quickly and without a Docker engine: the tree .dockerignore lets into the
// build context is copied aside, scripts/install-production.sh (the script the Dockerfile RUNs) installs
// into it, and the CLI must start from it with production dependencies only. image.int.test.ts builds
// and runs the image itself.
import { spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { BUNDLE_SHEBANG_FLAGS, OPERATOR_ENV, OPERATOR_NODE_FLAGS } from '@syncline/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildContextFiles, repositoryRoot } from './context.ts';

const root = repositoryRoot;

/** Copies the build context (what .dockerignore lets through) to `to`; returns its files. */
async function copyBuildContext(to: string): Promise<string[]> {
  const files = await buildContextFiles(root);
  for (const path of files) await cp(join(root, path), join(to, path), { preserveTimestamps: true });
  return files;
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
    expect(context).toEqual(
      expect.arrayContaining([
        'package.json',
        'pnpm-lock.yaml',
        'pnpm-workspace.yaml',
        'scripts/install-production.sh',
        'packages/cli/src/main.ts',
        'packages/cli/bin/syncline.js',
      ]),
    );
    const unwanted = context.filter((p) => /(^|\/)node_modules\//.test(p) || /^(\.git|\.toolchain|test|docs|examples|charts)\//.test(p));
    expect(unwanted).toEqual([]);
  });

  it('installs with scripts/install-production.sh, the same script the Dockerfile runs', async () => {
    const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^ARG NODE_VERSION=24\./m);
    expect(dockerfile).toMatch(/^ARG BASE_IMAGE=node:\$\{NODE_VERSION\}-bookworm-slim$/m);
    expect(dockerfile).toMatch(/^FROM \$\{BASE_IMAGE\} AS build$/m);
    expect(dockerfile).toMatch(/^RUN scripts\/install-production\.sh \/app/m);
    expect(dockerfile).toMatch(/^RUN ln -s \/app\/packages\/cli\/dist\/syncline\/syncline\.mjs \/usr\/local\/bin\/syncline/m);
    // the user switch comes last: nothing after it may need root (image.int.test.ts builds it for real)
    const afterUser = dockerfile.slice(dockerfile.search(/^USER 1000:1000$/m));
    expect(afterUser).not.toMatch(/^RUN /m);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["syncline"\]$/m);
    expect(dockerfile).toMatch(/^CMD \["run"/m);
    expect(install.stderr).not.toMatch(/ERR_PNPM/);
    expect(install.status).toBe(0);
  });

  it('runs the CLI from the installed tree, from its sources and from its JavaScript bundle', () => {
    // given the installed tree, when `syncline --help` runs from it, then it prints the usage
    for (const entry of ['packages/cli/bin/syncline.js', 'packages/cli/dist/syncline/syncline.mjs']) {
      const help = spawnSync(process.execPath, [entry, '--help'], { cwd: work, encoding: 'utf8' });
      expect(help.stderr, entry).toBe('');
      expect(help.status, entry).toBe(0);
      expect(help.stdout, entry).toMatch(/^ {2}run \[options\]\s+run the operator$/m);
    }
  });

  it("runs `syncline` from PATH through the link the Dockerfile makes (the image's ENTRYPOINT)", async () => {
    // given the Dockerfile's link on a PATH, when `syncline --version` runs, then the bin answers
    const bin = join(work, 'usr-local-bin');
    await mkdir(bin);
    await symlink(join(work, 'packages/cli/dist/syncline/syncline.mjs'), join(bin, 'syncline'));
    const version = spawnSync('syncline', ['--version'], {
      cwd: tmpdir(),
      encoding: 'utf8',
      env: { ...process.env, PATH: [bin, dirname(process.execPath), process.env['PATH'] ?? ''].join(delimiter) },
    });
    expect(version.stderr).toBe('');
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/^syncline \d+\.\d+\.\d+/);
  });

  it("renders templates from the installed tree's bundle (Handlebars and YAML load at runtime)", async () => {
    await mkdir(join(work, 'probe'));
    await writeFile(
      join(work, 'probe', 'cm.yaml.hbs'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{values.name}}\ndata:\n  env: {{quote target.name}}\n',
    );
    const render = spawnSync(
      process.execPath,
      ['packages/cli/dist/syncline/syncline.mjs', 'render', 'probe/cm.yaml.hbs', '--set', 'name=probe', '--target', 'prod'],
      { cwd: work, encoding: 'utf8' },
    );
    expect(render.stderr).toBe('');
    expect(render.stdout).toContain('name: probe');
    expect(render.stdout).toContain('env: prod');
  });

  it("runs the operator with the Node flags the tests and benchmarks start it with: NODE_OPTIONS, then the bundle's first line", async () => {
    const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
    const options = /^ENV NODE_OPTIONS=(.+)$/m.exec(dockerfile)?.[1];
    const entry = await readFile(join(root, 'packages/cli/src/bundle-entry.ts'), 'utf8');
    const shebang = /^#!\/usr\/bin\/env -S node (.+)$/m.exec(entry.split('\n')[0] ?? '')?.[1];
    expect(shebang).toBe(BUNDLE_SHEBANG_FLAGS.join(' '));
    expect([options, shebang].join(' ')).toBe(OPERATOR_NODE_FLAGS.join(' '));
    const bundled = await readFile(join(work, 'packages/cli/dist/syncline/syncline.mjs'), 'utf8');
    expect(bundled.split('\n')[0]).toBe(`#!/usr/bin/env -S node ${BUNDLE_SHEBANG_FLAGS.join(' ')}`);
    const node = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.execArgv.length))'], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: options },
    });
    expect(node.stderr).toBe('');
    expect(node.status).toBe(0);
  });

  it("runs the operator with the environment the tests and benchmarks start it with (the final stage's ENV)", async () => {
    const dockerfile = await readFile(join(root, 'Dockerfile'), 'utf8');
    const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    const env: Record<string, string> = Object.fromEntries([...finalStage.matchAll(/^ENV ([A-Z_]+)=(.*)$/gm)].map((match) => [match[1] ?? '', match[2] ?? '']));
    expect(env).toEqual({ NODE_ENV: 'production', NODE_OPTIONS: OPERATOR_NODE_FLAGS.slice(0, -BUNDLE_SHEBANG_FLAGS.length).join(' '), ...OPERATOR_ENV });
  });

  it('holds production dependencies only, and no tests or benchmarks', async () => {
    const installed = await readdir(join(work, 'node_modules', '.pnpm'));
    for (const dev of ['vitest', 'typescript', 'eslint', 'fast-check'])
      expect(
        installed.filter((name) => name.startsWith(`${dev}@`)),
        dev,
      ).toEqual([]);
    expect(installed.some((name) => name.startsWith('ssh2@'))).toBe(true);
    const leftovers = (await readdir(join(work, 'packages'), { recursive: true })).filter(
      (p) => !p.includes('node_modules') && /(\.test\.ts$|(^|\/)(bench|testdata)(\/|$))/.test(p),
    );
    expect(leftovers).toEqual([]);
  });
});
