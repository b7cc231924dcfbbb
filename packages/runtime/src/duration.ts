// Go-style durations (30s, 5m, 1h30m, 250ms), as Kubernetes users write them.
const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string): number {
  const re = /([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let match = re.exec(text); match !== null; match = re.exec(text)) {
    total += Number(match[1]) * (unitMs[match[2] ?? ''] ?? 0);
    consumed = re.lastIndex;
  }
  if (consumed !== text.length || text === '') throw new Error(`"${text}" is not a duration such as 30s, 5m or 1h30m`);
  return total;
}

/** The longest delay a Node timer holds: above it setTimeout fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export type IntervalBounds = { readonly minMs: number; readonly maxMs: number };

/**
 * An interval field as the operator uses it: parsed and held inside `bounds` (and inside what a timer can
 * hold). `adjusted` explains a clamp, for a condition; it is undefined when the spec was used as written.
 */
export function boundedInterval(field: string, text: string, bounds: IntervalBounds): { ms: number; adjusted?: string } {
  const ms = parseDuration(text);
  const maxMs = Math.min(bounds.maxMs, MAX_TIMER_MS);
  if (ms < bounds.minMs)
    return {
      ms: bounds.minMs,
      adjusted: `${field} ${text} is below the operator's minimum ${formatDuration(bounds.minMs)}; using ${formatDuration(bounds.minMs)}`,
    };
  if (ms > maxMs) return { ms: maxMs, adjusted: `${field} ${text} is above the maximum ${formatDuration(maxMs)}; using ${formatDuration(maxMs)}` };
  return { ms };
}

/** 90_000 → "1m30s"; whole milliseconds only. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  let rest = Math.round(ms);
  const parts: string[] = [];
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
    ['ms', 1],
  ] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n}${unit}`);
    rest -= n * size;
  }
  return parts.join('');
}
