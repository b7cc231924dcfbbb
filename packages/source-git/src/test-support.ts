// Helpers shared by source-git's tests (not part of the package's API).
import { expect } from 'vitest';
import { GitSourceError } from './index.ts';
import type { GitSourceError as GitSourceErrorType, SnapshotFile } from './index.ts';

/** The GitSourceError `p` rejects with; fails the test when it resolves or rejects with anything else. */
export async function failure(p: Promise<unknown>): Promise<GitSourceErrorType> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(GitSourceError);
    return err as GitSourceErrorType;
  }
  throw new Error('expected a failure');
}

/** A snapshot's files as path → UTF-8 text. */
export const text = (files: SnapshotFile[]): Record<string, string> => Object.fromEntries(files.map((f) => [f.path, Buffer.from(f.content).toString('utf8')]));
