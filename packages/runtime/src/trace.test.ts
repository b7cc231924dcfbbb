import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const traceModule = join(import.meta.dirname, 'trace.ts');
let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Runs a process that records two steps and exits, with SYNCLINE_TRACE as given. */
function runWith(file: string | undefined, cwd?: string): void {
  const env = { ...process.env };
  delete env['SYNCLINE_TRACE'];
  if (file !== undefined) env['SYNCLINE_TRACE'] = file;
  execFileSync(
    process.execPath,
    ['--input-type=module', '-e', `const { trace } = await import(${JSON.stringify(traceModule)}); trace('ns/a', 'queued'); trace('ns/a', 'start');`],
    { env, stdio: 'ignore', ...(cwd === undefined ? {} : { cwd }) },
  );
}

describe('the reconcile trace (SYNCLINE_TRACE)', () => {
  it('appends one line per step, the epoch time first, when the variable names a file', () => {
    // given
    dir = mkdtempSync(join(tmpdir(), 'trace-'));
    const file = join(dir, 'trace.log');
    const before = Date.now();

    // when
    runWith(file);

    // then
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines.map((line) => line.split(' ').slice(1))).toEqual([
      ['ns/a', 'queued'],
      ['ns/a', 'start'],
    ]);
    for (const line of lines) {
      const at = Number(line.split(' ')[0]);
      expect(at).toBeGreaterThanOrEqual(before - 1);
      expect(at).toBeLessThanOrEqual(Date.now() + 1);
    }
  });

  it('writes nothing when the variable is unset', () => {
    // given
    dir = mkdtempSync(join(tmpdir(), 'trace-'));

    // when
    runWith(undefined, dir);

    // then
    expect(readdirSync(dir)).toEqual([]);
  });
});
