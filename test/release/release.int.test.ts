// `./pnpm release`'s folder, checked with the tools a user would check it with: `sha256sum -c`, the OCI archive's
// index and blobs against the digest the packaged chart pins (read back with the real helm), the CRDs file
// against crds/, the CycloneDX SBOM, the two executables (amd64 run with no Node anywhere on PATH, arm64 an
// aarch64 ELF carrying the same CLI, run under Debian's qemu-user). The image is the image test's cached build;
// the executables and the SBOM come from the release cache when the CLI tests built them already. It needs no
// cluster (the integration project: it builds the image when the cache has none).
import { ensureHelm } from '@syncline/test-support';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, open, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { buildRelease, type Release } from '../../scripts/release.ts';

const root = join(import.meta.dirname, '..', '..');
let work: string;
let release: Release;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'syncline-release-'));
  release = await buildRelease({ out: join(work, 'syncline'), onProgress: (line) => console.log(`[release] ${line}`) });
}, 60 * 60_000);
afterAll(async () => {
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

function sh(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(command, [...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 300_000, ...options });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Lists and reads a tar's members with tar itself. */
function tarMember(archive: string, member: string): string {
  const result = sh('tar', ['-xOf', archive, member]);
  if (result.status !== 0) throw new Error(`tar -xOf ${archive} ${member}: ${result.stderr}`);
  return result.stdout;
}

describe('./pnpm release', () => {
  it('writes every file, and SHA256SUMS that `sha256sum -c` accepts for all of them', async () => {
    const names = (await readdir(release.dir)).sort();
    const f = release.files;
    const expected = [f.imageArchive, f.imageDigest, f.chart, f.crds, f.cli.amd64, f.cli.arm64, f.sbom, f.checksums]
      .map((p) => p.slice(release.dir.length + 1))
      .sort();
    expect(names).toEqual(expected);
    const check = sh('sha256sum', ['-c', 'SHA256SUMS'], { cwd: release.dir });
    expect(check.status, check.stderr).toBe(0);
    expect(check.stdout.trim().split('\n').sort()).toEqual(names.filter((n) => n !== 'SHA256SUMS').map((n) => `${n}: OK`));
  });

  it("the image archive is an OCI layout whose one manifest is the digest the packaged chart pins, named for the chart's repository", async () => {
    const digest = (await readFile(release.files.imageDigest, 'utf8')).trim();
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(release.digest).toBe(digest);
    // the index names it for skopeo (ref.name) and for containerd (tag and digest)
    const index = JSON.parse(tarMember(release.files.imageArchive, 'index.json')) as { manifests: { digest: string; annotations: Record<string, string> }[] };
    expect(index.manifests.map((m) => m.digest)).toEqual([digest, digest]);
    expect(index.manifests.map((m) => m.annotations)).toEqual([
      { 'org.opencontainers.image.ref.name': release.version, 'io.containerd.image.name': `${release.repository}:${release.version}` },
      { 'io.containerd.image.name': `${release.repository}@${digest}` },
    ]);
    expect(JSON.parse(tarMember(release.files.imageArchive, 'oci-layout'))).toEqual({ imageLayoutVersion: '1.0.0' });
    // every blob the manifest names is in the archive, under its own hash
    const manifestText = tarMember(release.files.imageArchive, `blobs/sha256/${digest.slice('sha256:'.length)}`);
    expect(`sha256:${createHash('sha256').update(manifestText).digest('hex')}`).toBe(digest);
    const manifest = JSON.parse(manifestText) as { config: { digest: string }; layers: { digest: string; size: number }[] };
    const listed = sh('tar', ['-tvf', release.files.imageArchive]).stdout;
    for (const blob of [manifest.config, ...manifest.layers]) expect(listed).toContain(`blobs/sha256/${blob.digest.slice('sha256:'.length)}`);
    const config = tarMember(release.files.imageArchive, `blobs/sha256/${manifest.config.digest.slice('sha256:'.length)}`);
    expect(`sha256:${createHash('sha256').update(config).digest('hex')}`).toBe(manifest.config.digest);

    // and the chart, read back by helm, runs repository@digest
    const helm = await ensureHelm();
    const home = join(work, 'helm-home');
    const rendered = sh(helm, ['template', 'syncline', release.files.chart, '-n', 'syncline-system'], {
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: home,
        HELM_CACHE_HOME: join(home, 'c'),
        HELM_CONFIG_HOME: join(home, 'g'),
        HELM_DATA_HOME: join(home, 'd'),
      },
    });
    expect(rendered.status, rendered.stderr).toBe(0);
    const deployment = parseAllDocuments(rendered.stdout)
      .map((d) => d.toJS() as { kind?: string; spec?: { template: { spec: { containers: { image: string }[] } } } } | null)
      .find((o) => o?.kind === 'Deployment');
    expect(deployment?.spec?.template.spec.containers[0]?.image).toBe(`${release.repository}@${digest}`);
    const chartMeta = parse(sh('tar', ['-xzOf', release.files.chart, 'syncline/Chart.yaml']).stdout) as { version: string; appVersion: string };
    expect(chartMeta).toMatchObject({ version: release.version, appVersion: release.version });
  });

  it('the image archive is reproducible: built again from the same image, it is the same bytes', async () => {
    const again = await buildRelease({ out: join(work, 'again'), parts: ['image'] });
    const sum = (path: string): string => sh('sha256sum', [path]).stdout.split(' ')[0] ?? '';
    expect(sum(again.files.imageArchive)).toBe(sum(release.files.imageArchive));
  }, 300_000);

  it('the CRDs file holds every CRD of crds/, as written', async () => {
    const inFile = parseAllDocuments(await readFile(release.files.crds, 'utf8')).map((d) => d.toJS() as unknown);
    const dir = join(root, 'crds');
    const inDir = await Promise.all(
      (await readdir(dir))
        .filter((n) => n.endsWith('.yaml'))
        .sort()
        .map(async (n) => parse(await readFile(join(dir, n), 'utf8')) as unknown),
    );
    expect(inFile).toEqual(inDir);
    expect(inFile).toHaveLength(7);
  });

  it('the SBOM is CycloneDX 1.6 for syncline at this version, with the npm packages and Go modules shipped and no test-only package', async () => {
    const bom = JSON.parse(await readFile(release.files.sbom, 'utf8')) as {
      bomFormat: string;
      specVersion: string;
      metadata: { component: { name: string; version: string } };
      components: { purl: string; scope?: string }[];
    };
    expect(bom).toMatchObject({ bomFormat: 'CycloneDX', specVersion: '1.6', metadata: { component: { name: 'syncline', version: release.version } } });
    const purls = bom.components.map((c) => c.purl);
    for (const shipped of [
      'pkg:npm/commander@15.1.0',
      'pkg:npm/pino@',
      'pkg:npm/zod@',
      'pkg:npm/%40kubernetes/client-node@',
      'pkg:golang/helm.sh/helm/v3@v3.22.0',
      'pkg:golang/sigs.k8s.io/kustomize/api@',
    ]) {
      expect(
        purls.some((p) => p.startsWith(shipped)),
        shipped,
      ).toBe(true);
    }
    // dev tools of the repository are not part of what ships
    for (const devOnly of ['pkg:npm/eslint@', 'pkg:npm/typescript@', 'pkg:npm/vitest@'])
      expect(
        purls.some((p) => p.startsWith(devOnly)),
        devOnly,
      ).toBe(false);
  });

  it('the amd64 executable is the CLI with its own Node: --version and help with no Node on PATH', () => {
    const env = { PATH: '/nonexistent', HOME: work };
    const version = sh(release.files.cli.amd64, ['--version'], { env });
    expect(version.stderr).toBe('');
    expect(version.stdout).toMatch(new RegExp(`^syncline ${release.version.replaceAll('.', '\\.')}( \\(commit [0-9a-f]{12}\\))?\\n$`));
    const help = sh(release.files.cli.amd64, ['get', '--help'], { env });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('configsyncs');
  });

  it('the arm64 executable is an aarch64 ELF with the same CLI injected, and runs under qemu-user', async () => {
    // ELF64, little endian, e_machine 183 (EM_AARCH64)
    const file = await open(release.files.cli.arm64, 'r');
    const header = Buffer.alloc(20);
    await file.read(header, 0, 20, 0);
    await file.close();
    expect(header.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    expect(header[4]).toBe(2);
    expect(header[5]).toBe(1);
    expect(header.readUInt16LE(18)).toBe(183);
    // Node's fuse flipped by postject, and the CLI's version asset inside
    const bytes = await readFile(release.files.cli.arm64);
    expect(bytes.includes('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1')).toBe(true);
    const amd64Version = sh(release.files.cli.amd64, ['--version']).stdout;
    expect(bytes.includes(amd64Version.slice('syncline '.length))).toBe(true);
    // and it runs: Debian's qemu-user with the aarch64 C and C++ runtimes (installed when missing, as root)
    ensureDebianPackages({
      'qemu-aarch64': 'qemu-user',
      '/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1': 'libc6-arm64-cross',
      '/usr/aarch64-linux-gnu/lib/libstdc++.so.6': 'libstdc++6-arm64-cross',
      '/usr/aarch64-linux-gnu/lib/libgcc_s.so.1': 'libgcc-s1-arm64-cross',
    });
    const run = sh('qemu-aarch64', ['-L', '/usr/aarch64-linux-gnu', release.files.cli.arm64, '--version'], { env: { PATH: '/usr/bin:/bin', HOME: work } });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe(amd64Version);
  }, 600_000);
});

/** Installs the Debian packages whose file or command is missing (as scripts/build-image.sh does for buildah). */
function ensureDebianPackages(wanted: Record<string, string>): void {
  const missing = Object.entries(wanted)
    .filter(([what]) => (what.startsWith('/') ? !existsSync(what) : sh('sh', ['-c', `command -v ${what}`]).status !== 0))
    .map(([, pkg]) => pkg);
  if (missing.length === 0) return;
  const update = sh('apt-get', ['update', '-qq']);
  expect(update.status, update.stderr).toBe(0);
  const install = sh('apt-get', ['install', '-y', '-qq', ...missing], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  expect(install.status, `apt-get install ${missing.join(' ')}: ${install.stderr}`).toBe(0);
}
