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
