// The image, built from the Dockerfile by scripts/build-image.sh (buildah, no Docker daemon) and cached by
// the hash of what goes into it, as the test control plane is: the first run on a machine builds (minutes),
// every later run with the same Dockerfile, build script and build context unpacks nothing and takes
// seconds. It runs without a container runtime: its root filesystem, mounted read-only, chrooted into as
// uid 1000 (`podman run` needs setrlimit and cgroups that unprivileged sandboxes such as CI runners may
// refuse).
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { withBuildLock } from '@syncline/test-support';
import { buildContextFiles, repositoryRoot } from './context.ts';

/** What config.json (the OCI runtime config umoci writes from the image's config) says to run. */
type RuntimeConfig = { process: { user: { uid: number; gid: number }; args: string[]; env: string[]; cwd: string } };

export type BuiltImage = {
  /** The unpacked root filesystem. */
  readonly rootfs: string;
  /** The image as an OCI image layout (one manifest), as buildah pushed it: what a release archives. */
  readonly ociLayout: string;
  /** ENTRYPOINT + CMD, Env, WorkingDir and User as the image declares them. */
  readonly config: RuntimeConfig['process'];
  readonly size: { readonly uncompressedBytes: number; readonly compressedBytes: number };
  /** Seconds the build took; undefined when the cache had it. */
  readonly buildSeconds: number | undefined;
};

function defaultCacheDir(): string {
  // Test-only helper: reading the environment here is the test harness's own composition root.
  const xdg = process.env['XDG_CACHE_HOME'];
  return join(xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache'), 'syncline');
}

/** The cache key: the Dockerfile, the build script and every file of the build context, names and contents. */
async function imageKey(): Promise<string> {
  const hash = createHash('sha256');
  for (const path of ['Dockerfile', '.dockerignore', 'scripts/build-image.sh', ...(await buildContextFiles())]) {
    hash
      .update(`${path}\0`)
      .update(await readFile(join(repositoryRoot, path)))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** The image of this checkout, built when the cache has none for its inputs. */
export async function ensureImage(options: { cacheDir?: string; onProgress?: (line: string) => void } = {}): Promise<BuiltImage> {
  const base = join(options.cacheDir ?? defaultCacheDir(), 'image');
  const dir = join(base, await imageKey());
  // One build at a time on a machine (the image test and a release may ask at once): the second waits, then
  // finds the first one's image.
  const buildSeconds = existsSync(join(dir, 'size.json'))
    ? undefined
    : await withBuildLock(join(base, '.build-lock'), options, () => buildInto(base, dir, options.onProgress));
  // Its age says when it was last used (pruneOtherImages).
  await utimes(dir, new Date(), new Date());
  const config = JSON.parse(await readFile(join(dir, 'bundle', 'config.json'), 'utf8')) as RuntimeConfig;
  const size = JSON.parse(await readFile(join(dir, 'size.json'), 'utf8')) as BuiltImage['size'];
  return { rootfs: join(dir, 'bundle', 'rootfs'), ociLayout: join(dir, 'oci'), config: config.process, size, buildSeconds };
}

/** Builds the image into `dir` unless another run did while this one waited; the seconds it took, if it built. */
async function buildInto(base: string, dir: string, onProgress: ((line: string) => void) | undefined): Promise<number | undefined> {
  if (existsSync(join(dir, 'size.json'))) return undefined;
  // Built aside, then renamed: a run that dies half way leaves no half image under the key.
  const aside = join(base, `build-${process.pid}-${randomBytes(4).toString('hex')}`);
  await mkdir(base, { recursive: true });
  onProgress?.('building the image with scripts/build-image.sh (first run for these sources; minutes)');
  const started = Date.now();
  try {
    await runBuild(aside, base, onProgress);
    await rename(aside, dir);
  } finally {
    await rm(aside, { recursive: true, force: true });
  }
  const buildSeconds = (Date.now() - started) / 1000;
  onProgress?.(`built the image in ${Math.round(buildSeconds)}s`);
  await pruneOtherImages(base, dir);
  return buildSeconds;
}

function runBuild(out: string, cacheBase: string, onProgress: ((line: string) => void) | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(repositoryRoot, 'scripts', 'build-image.sh'), out], {
      env: { ...process.env, SYNCLINE_IMAGE_STORAGE: join(cacheBase, 'containers') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const collect = (chunk: Buffer): void => {
      output += chunk.toString();
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') onProgress?.(line.trim());
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`scripts/build-image.sh failed (exit ${code}):\n${output.slice(-4000)}`))));
  });
}

/**
 * Unpacked images of other sources go once unused for a day (another checkout on this machine may be running
 * one now); buildah's layer storage stays for the next rebuild.
 */
async function pruneOtherImages(base: string, keep: string): Promise<void> {
  const dayAgo = Date.now() - 24 * 3600_000;
  for (const entry of await readdir(base)) {
    const path = join(base, entry);
    if (!/^[0-9a-f]{16}$/.test(entry) || path === keep) continue;
    if ((await stat(path)).mtimeMs < dayAgo) await rm(path, { recursive: true, force: true });
  }
}

/**
 * The command line that runs the image's ENTRYPOINT (arguments follow) the way the chart's pod does: uid and
 * gid from the image's USER, its Env and WorkingDir, a read-only root filesystem with a writable emptyDir-like
 * tmpfs at /tmp and at each of `writable`, and the host's /dev and /proc. `hostFiles` are bind-mounted
 * read-only at /mnt/<name> (the kubeconfig). A private mount namespace (unshare) keeps every mount to the one
 * process tree; needs root (CAP_SYS_ADMIN, CAP_SYS_CHROOT).
 */
export function imageCommand(image: BuiltImage, options: { hostDir: string; writable: readonly string[] }): [string, ...string[]] {
  const { user, env, cwd, args } = image.config;
  const entrypoint = args.slice(0, 1);
  const script = [
    'set -eu',
    'root="$1" host="$2"; shift 2',
    // A read-only view of the root filesystem: a bind mount of it onto itself, remounted read-only (in this
    // mount namespace only; the cache's copy stays as it is for everyone else).
    'view="$root"',
    'mount --bind "$root" "$view"',
    'mount -o remount,bind,ro "$view"',
    'mount --rbind /dev "$view/dev"',
    'mount --rbind /proc "$view/proc"',
    'mount -t tmpfs -o mode=1777,size=64m tmpfs "$view/tmp"',
    ...options.writable.map((path) => `mount -t tmpfs -o mode=0755,uid=${user.uid},gid=${user.gid},size=256m tmpfs "$view${path}"`),
    'mount --bind -o ro "$host" "$view/mnt"',
    `exec chroot --userspec=${user.uid}:${user.gid} "$view" /usr/bin/env -i --chdir=${shellQuote(cwd)} ${env.map(shellQuote).join(' ')} "$@"`,
  ].join('\n');
  return ['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', script, 'syncline-image', image.rootfs, options.hostDir, ...entrypoint];
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
