// The operator's logger: pino, with string levels and RFC 3339 times (what Flux's controllers and most log
// pipelines expect), as JSON lines or as one human-readable line per entry.
import { pino, type Logger } from 'pino';

export const LogFormat = { json: 'json', text: 'text' } as const;
export type LogFormat = (typeof LogFormat)[keyof typeof LogFormat];

export type LoggerOptions = {
  readonly level: string;
  readonly format: LogFormat;
  /** Fields on every line (pid, shard). */
  readonly base?: Record<string, unknown>;
  /** Where lines go; standard output by default. */
  readonly destination?: { write(line: string): unknown };
};

/**
 * Standard output, written without blocking: a log line never holds up a reconcile while the reader of the pipe
 * (the container runtime, a test harness) is slow. Lines are written in order as soon as the previous write is
 * done; what is still buffered when the process exits (SIGTERM, a crash) is flushed then. Only SIGKILL can
 * lose the last few lines.
 */
function standardOutput(): { write(line: string): unknown } {
  return pino.destination({ dest: 1, sync: false });
}

export function createLogger(options: LoggerOptions): Logger {
  const out = options.destination ?? standardOutput();
  return pino(
    {
      level: options.level,
      base: options.base ?? null,
      formatters: { level: (label) => ({ level: label }) },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Belt and braces: no credential-shaped field ever reaches a log line.
      redact: { paths: ['*.password', '*.token', '*.bearerToken', '*.authorization', '*.data', 'auth'], censor: '[redacted]' },
    },
    options.format === LogFormat.text ? { write: (line: string) => out.write(formatTextLine(line)) } : out,
  );
}

/**
 * One JSON log line as `TIME LEVEL message key=value …` (the time in RFC 3339, the level upper case, strings
 * that hold spaces, quotes or `=` JSON-quoted, other values as JSON).
 */
export function formatTextLine(jsonLine: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(jsonLine) as Record<string, unknown>;
  } catch {
    return jsonLine.endsWith('\n') ? jsonLine : `${jsonLine}\n`;
  }
  const { time, level, msg, ...fields } = entry;
  const pairs = Object.entries(fields).map(([key, value]) => `${key}=${textValue(value)}`);
  return `${[plain(time), plain(level).toUpperCase(), plain(msg), ...pairs].join(' ')}\n`;
}

function plain(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined ? '' : (JSON.stringify(value) ?? '');
}

function textValue(value: unknown): string {
  if (typeof value !== 'string') return JSON.stringify(value) ?? String(value);
  return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
}
