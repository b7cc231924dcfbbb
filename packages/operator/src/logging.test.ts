import { describe, expect, it } from 'vitest';
import { LogFormat, createLogger, formatTextLine } from './logging.ts';

function capture(format: LogFormat): { lines: string[]; logger: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const logger = createLogger({ level: 'info', format, base: { pid: 7, shard: 'default' }, destination: { write: (line: string) => lines.push(line) } });
  return { lines, logger };
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

describe('operator logs', () => {
  it('JSON lines carry a string level and an RFC 3339 time', () => {
    const { lines, logger } = capture(LogFormat.json);
    logger.info({ configsync: 'ops/web' }, 'synced');
    logger.error({ err: 'boom' }, 'sync failed');
    logger.debug('not shown at info');

    expect(lines).toHaveLength(2);
    const [info, error] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(info).toMatchObject({ level: 'info', msg: 'synced', configsync: 'ops/web', pid: 7, shard: 'default' });
    expect(error).toMatchObject({ level: 'error', msg: 'sync failed', err: 'boom' });
    expect(String(info?.['time'])).toMatch(RFC3339);
    expect(Number.isNaN(Date.parse(String(info?.['time'])))).toBe(false);
  });

  it('text is one human line per entry: time, level, message, fields', () => {
    const { lines, logger } = capture(LogFormat.text);
    logger.warn({ host: 'git.example.com', waitMs: 500, reason: 'rate limited' }, 'the Git host rate-limited us');

    expect(lines).toHaveLength(1);
    const line = lines[0] ?? '';
    expect(line.endsWith('\n')).toBe(true);
    expect(line.split('\n')).toHaveLength(2);
    const [time, level, ...rest] = line.trimEnd().split(' ');
    expect(time).toMatch(RFC3339);
    expect(level).toBe('WARN');
    expect(rest.join(' ')).toBe('the Git host rate-limited us pid=7 shard=default host=git.example.com waitMs=500 reason="rate limited"');
  });

  it('redacts credential-shaped fields in both formats', () => {
    for (const format of [LogFormat.json, LogFormat.text]) {
      const { lines, logger } = capture(format);
      logger.info({ secret: { password: 'hunter2', token: 't0ken' } }, 'read the Git Secret');
      expect(lines.join('')).not.toMatch(/hunter2|t0ken/);
      expect(lines.join('')).toContain('[redacted]');
    }
  });

  it('passes a line that is not JSON through', () => {
    expect(formatTextLine('plain')).toBe('plain\n');
  });
});
