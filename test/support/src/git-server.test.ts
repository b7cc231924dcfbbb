import { mkdtemp, readFile, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGit, startGitServer } from './git-server.ts';

describe('the test Git server', () => {
  let scratch: string;
  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'git-server-test-'));
  });
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('serves commits, deletions, symlinks, tags and moved branches to a native git clone', async () => {
    // given
    await using server = await startGitServer();
    const repo = await server.createRepo('configs');
    const first = await repo.commit({ 'apps/web/a.yaml': 'a: 1\n', 'old.txt': 'x', 'bin.dat': new Uint8Array([0, 1, 2, 255]) });
    const second = await repo.commit({ 'old.txt': null, link: { symlink: 'apps/web/a.yaml' } }, { message: 'second' });
    await repo.tag('v1', first, { annotated: true });
    await repo.commit({ 'b.txt': 'b' }, { branch: 'feature' });
    await repo.setBranch('pinned', first);

    // when
    const clone = join(scratch, 'clone1');
    await runGit(['clone', '--quiet', '--depth', '1', repo.url, clone]);

    // then
    expect(await repo.resolve('main')).toBe(second);
    expect(await repo.resolve('v1')).toBe(first);
    expect(await repo.resolve('pinned')).toBe(first);
    expect(await readFile(join(clone, 'apps/web/a.yaml'), 'utf8')).toBe('a: 1\n');
    expect(await readlink(join(clone, 'link'))).toBe('apps/web/a.yaml');
    expect([...(await readFile(join(clone, 'bin.dat')))]).toEqual([0, 1, 2, 255]);
    await expect(stat(join(clone, 'old.txt'))).rejects.toThrow(/ENOENT/);
    expect((await runGit(['rev-parse', 'HEAD'], { cwd: clone })).trim()).toBe(second);
    const counts = server.requests('configs');
    expect(counts.infoRefs).toBeGreaterThanOrEqual(1);
    expect(counts.uploadPack).toBeGreaterThanOrEqual(1);
    expect(server.requests('other')).toEqual({ infoRefs: 0, uploadPack: 0 });
  });

  it('lets a client fetch a commit that is no branch tip', async () => {
    // given
    await using server = await startGitServer();
    const repo = await server.createRepo('r');
    const old = await repo.commit({ 'f.txt': 'old' });
    await repo.commit({ 'f.txt': 'new' });
    const clone = join(scratch, 'clone2');
    await runGit(['init', '--quiet', clone]);

    // when
    await runGit(['fetch', '--quiet', '--depth', '1', repo.url, old], { cwd: clone });

    // then
    expect(await runGit(['cat-file', '-p', `${old}:f.txt`], { cwd: clone })).toBe('old');
  });

  it('requires the configured basic or bearer credentials', async () => {
    // given
    await using basic = await startGitServer({ auth: { username: 'u', password: 'p' } });
    await using bearer = await startGitServer({ auth: { bearerToken: 'tok' } });
    await basic.createRepo('r');
    await bearer.createRepo('r');

    // when
    const anonymous = await fetch(`${basic.url}/r.git/info/refs?service=git-upload-pack`);
    const withBasic = await fetch(`${basic.url}/r.git/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from('u:p').toString('base64')}` },
    });
    const withBearer = await fetch(`${bearer.url}/r.git/info/refs?service=git-upload-pack`, { headers: { authorization: 'Bearer tok' } });
    const wrongBearer = await fetch(`${bearer.url}/r.git/info/refs?service=git-upload-pack`, { headers: { authorization: 'Bearer nope' } });

    // then
    expect(anonymous.status).toBe(401);
    expect(withBasic.status).toBe(200);
    expect(withBearer.status).toBe(200);
    expect(wrongBearer.status).toBe(401);
    expect(basic.requestLog().map((r) => r.hasAuthorization)).toEqual([false, true]);
  });

  it('injects faults: status, redirect, huge bodies and hangs', async () => {
    // given
    await using server = await startGitServer();
    await server.createRepo('r');
    const refs = `${server.url}/r.git/info/refs?service=git-upload-pack`;

    // when / then
    server.setBehavior({ kind: 'status', status: 500 });
    expect((await fetch(refs)).status).toBe(500);

    server.setBehavior({ kind: 'redirect', to: 'http://elsewhere.invalid' });
    const redirected = await fetch(refs, { redirect: 'manual' });
    expect(redirected.status).toBe(302);
    expect(redirected.headers.get('location')).toBe('http://elsewhere.invalid/r.git/info/refs?service=git-upload-pack');

    server.setBehavior({ kind: 'huge', bytes: 1_000_000 });
    expect((await (await fetch(refs)).arrayBuffer()).byteLength).toBe(1_000_000);

    server.setBehavior({ kind: 'hang' });
    await expect(fetch(refs, { signal: AbortSignal.timeout(200) })).rejects.toThrow();

    server.setBehavior({ kind: 'status', status: 503, only: 'git-upload-pack' });
    expect((await fetch(refs)).status).toBe(200);

    server.setBehavior(undefined);
    expect((await fetch(refs)).status).toBe(200);
  });
});
