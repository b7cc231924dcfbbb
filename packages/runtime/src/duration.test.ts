import { describe, expect, it } from 'vitest';
import { MAX_TIMER_MS, boundedInterval, formatDuration, parseDuration } from './duration.ts';

describe('parseDuration', () => {
  it.each([
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['250ms', 250],
    ['1.5s', 1500],
  ])('reads %s as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '5', 'm', '5x', '1h 30m', '-1s'])('refuses %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/not a duration/);
  });
});

describe('boundedInterval', () => {
  const bounds = { minMs: 10_000, maxMs: 168 * 3_600_000 };

  it.each(['0s', '0ms', '1ms', '999ms', '9s', '0.5s'])('raises %s to the floor and says so', (text) => {
    const result = boundedInterval('refreshInterval', text, bounds);
    expect(result.ms).toBe(10_000);
    expect(result.adjusted).toMatch(new RegExp(`refreshInterval ${text.replace('.', '\\.')} is below the operator's minimum 10s`));
  });

  it.each(['169h', '1000h', '596h31m', '100000h'])('lowers %s to the ceiling, which a timer can hold', (text) => {
    const result = boundedInterval('refreshInterval', text, bounds);
    expect(result.ms).toBe(168 * 3_600_000);
    expect(result.ms).toBeLessThanOrEqual(MAX_TIMER_MS);
    expect(result.adjusted).toMatch(/above the maximum 168h/);
  });

  it('never exceeds what a timer holds, whatever the configured ceiling', () => {
    expect(boundedInterval('interval', '1000h', { minMs: 1000, maxMs: Number.MAX_SAFE_INTEGER }).ms).toBe(MAX_TIMER_MS);
  });

  it.each(['10s', '5m', '1h30m', '168h'])('keeps %s as written', (text) => {
    expect(boundedInterval('refreshInterval', text, bounds)).toEqual({ ms: parseDuration(text) });
  });
});

describe('formatDuration', () => {
  it.each([
    [250, '250ms'],
    [10_000, '10s'],
    [90_000, '1m30s'],
    [168 * 3_600_000, '168h'],
    [1500, '1s500ms'],
  ])('writes %d ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
