import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GitSourceError } from './errors.ts';
import { isSafeEntryName, parseRequestPath, resolveSymlinkTarget } from './paths.ts';

function outcome<T>(fn: () => T): { ok: true; value: T } | { ok: false; error: unknown } {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, error };
  }
}

const segmentChars = fc.constantFrom('a', 'b', '.', '/', '\\', '%', '2', 'e', 'f', 'c', '5', 'G', 'i', 't', 'g', ':', '\0', ' ');
const pathLike = fc.array(segmentChars, { maxLength: 24 }).map((cs) => cs.join(''));
const safeName = fc.stringMatching(/^[a-z0-9_-][a-z0-9._-]{0,11}$/).filter(isSafeEntryName);

describe('parseRequestPath (spec.path)', () => {
  it('yields only safe segments, or refuses with an UnsafePath error', () => {
    fc.assert(
      fc.property(fc.oneof(pathLike, fc.string()), (path) => {
        const r = outcome(() => parseRequestPath(path));
        if (!r.ok) {
          expect(r.error).toBeInstanceOf(GitSourceError);
          expect((r.error as GitSourceError).code).toBe('UnsafePath');
          return;
        }
        for (const segment of r.value) expect(isSafeEntryName(segment)).toBe(true);
        expect(path.startsWith('/')).toBe(false);
        expect(path).not.toContain('\\');
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses every path with a ".." segment, wherever it is', () => {
    fc.assert(
      fc.property(fc.array(safeName, { maxLength: 4 }), fc.array(safeName, { maxLength: 4 }), (before, after) => {
        const path = [...before, '..', ...after].join('/');
        expect(() => parseRequestPath(path)).toThrow(/'\.\.'/);
      }),
    );
  });

  it('round-trips safe relative paths, ignoring empty and "." segments', () => {
    fc.assert(
      fc.property(fc.array(safeName, { maxLength: 6 }), fc.boolean(), (segments, trailingSlash) => {
        const path = segments.join('/') + (trailingSlash && segments.length > 0 ? '/' : '');
        expect(parseRequestPath(path)).toEqual(segments);
        expect(parseRequestPath(segments.join('/./'))).toEqual(segments);
      }),
    );
  });

  it.each([
    ['/etc/passwd', /absolute/],
    ['C:/x', /absolute/],
    ['apps/../../etc', /'\.\.'/],
    ['apps\\web', /backslash/],
    ['apps/%2e%2e/x', /percent-encoded/],
    ['apps%2F..%2Fx', /percent-encoded/],
    ['.git/config', /not allowed/],
    ['apps/.GIT', /not allowed/],
  ])('refuses %s', (path, message) => {
    expect(() => parseRequestPath(path)).toThrow(message);
  });

  it('treats "", "." and "./" as the repository root', () => {
    expect(parseRequestPath('')).toEqual([]);
    expect(parseRequestPath('.')).toEqual([]);
    expect(parseRequestPath('./')).toEqual([]);
  });
});

describe('resolveSymlinkTarget', () => {
  it('never leaves the repository root: the result is safe segments, or an UnsafePath error', () => {
    fc.assert(
      fc.property(fc.array(safeName, { maxLength: 4 }), fc.oneof(pathLike, fc.string()), (dir, target) => {
        const r = outcome(() => resolveSymlinkTarget(dir, target, 'link'));
        if (!r.ok) {
          expect((r.error as GitSourceError).code).toBe('UnsafePath');
          return;
        }
        for (const segment of r.value) expect(isSafeEntryName(segment)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses a target with more ".." than the link is deep, and any absolute target', () => {
    fc.assert(
      fc.property(fc.array(safeName, { maxLength: 4 }), fc.integer({ min: 1, max: 3 }), safeName, (dir, extra, name) => {
        const target = [...Array<string>(dir.length + extra).fill('..'), name].join('/');
        expect(() => resolveSymlinkTarget(dir, target, 'link')).toThrow(/outside the repository/);
        expect(() => resolveSymlinkTarget(dir, `/${name}`, 'link')).toThrow(/outside the repository/);
      }),
    );
  });

  it('resolves relative targets against the link directory', () => {
    expect(resolveSymlinkTarget(['apps', 'web'], '../shared/x.yaml', 'l')).toEqual(['apps', 'shared', 'x.yaml']);
    expect(resolveSymlinkTarget([], './a/b', 'l')).toEqual(['a', 'b']);
  });
});
