import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const child = join(import.meta.dirname, 'testdata', 'log-child.ts');

type Run = { lines: Record<string, unknown>[]; code: number | null; stderr: string };

/** Runs testdata/log-child.ts, reading its standard output from the start (a reader that keeps up). */
async function run(scenario: string, count: number): Promise<Run> {
  const process_ = spawn(process.execPath, [child, scenario, String(count)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let stderr = '';
  process_.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  process_.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await once(process_, 'close')) as [number | null];
  return { lines: parseLines(out), code, stderr };
}

function parseLines(text: string): Record<string, unknown>[] {
  expect(text === '' || text.endsWith('\n')).toBe(true);
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const numbered = (lines: Record<string, unknown>[], msg: string, key: string): unknown[] => lines.filter((l) => l['msg'] === msg).map((l) => l[key]);
const upTo = (count: number): number[] => Array.from({ length: count }, (_, n) => n);

describe('the operator log writer (standard output)', () => {
  it('writes every line, in order, when lines come one per turn and the process ends by itself', async () => {
    const { lines, code } = await run('turns', 2000);
    expect(code).toBe(0);
    expect(numbered(lines, 'line', 'n')).toEqual(upTo(2000));
  });

  it('writes the lines still waiting when the process calls process.exit', async () => {
    // 4,000 lines of ~200 bytes in one turn, several times a pipe's capacity: the last of them wait for the exit.
    const { lines, code } = await run('exit', 4000);
    expect(code).toBe(3);
    expect(numbered(lines, 'line', 'n')).toEqual(upTo(4000));
  });

  it('writes the lines still waiting when the process crashes', async () => {
    const { lines, code, stderr } = await run('crash', 3000);
    expect(code).toBe(1);
    expect(stderr).toContain('the crash the test asked for');
    expect(numbered(lines, 'line', 'n')).toEqual(upTo(3000));
  });

  it('never blocks while the reader stalls: keeps a bounded prefix, drops the rest, says how many', async () => {
    // 20,000 lines of ~200 bytes (4 MB) while the test does not read: the writer may keep about 1 MB waiting.
    const total = 20_000;
    const process_ = spawn(process.execPath, [child, 'stall', String(total)], { stdio: ['pipe', 'pipe', 'pipe'] });
    process_.stdout.pause();
    let stderr = '';
    process_.stderr.setEncoding('utf8');
    // The child reports it logged every line while nobody read its output: had a write blocked, it never would.
    await new Promise<void>((resolve) =>
      process_.stderr.on('data', (chunk: string) => {
        stderr += chunk;
        if (stderr.includes('"stalled"')) resolve();
      }),
    );
    expect(JSON.parse(stderr.trim())).toEqual({ stalled: total });

    let out = '';
    process_.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    process_.stdout.resume();
    process_.stdin.write('go\n');
    const [code] = (await once(process_, 'close')) as [number | null];
    expect(code).toBe(0);

    const lines = parseLines(out);
    const kept = numbered(lines, 'line', 'n');
    // What was written is a whole-line prefix of what was logged, in order; what the bound could not keep is counted.
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(total);
    expect(kept).toEqual(upTo(kept.length));
    const keptBytes = lines.filter((l) => l['msg'] === 'line').reduce((sum, l) => sum + JSON.stringify(l).length + 1, 0);
    // The bound (1 MB) plus what the pipe itself holds (64 KB on Linux by default; allow for a larger one).
    expect(keptBytes).toBeLessThan(2 * 1024 * 1024);
    // Lines logged once the reader is back are written again (the first of them may still meet the full bound).
    const after = numbered(lines, 'after', 'after') as number[];
    expect(after).toEqual([...after].sort((a, b) => a - b));
    expect(after).toContain(19);
    const warnings = lines.filter((l) => l['msg'] === 'log lines dropped: standard output was not read');
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings.every((w) => w['level'] === 'warn')).toBe(true);
    expect(warnings.reduce((sum, w) => sum + Number(w['dropped']), 0)).toBe(total - kept.length + (20 - after.length));
  });
});
