// The operator's logger: pino, with string levels and RFC 3339 times (what Flux's controllers and most log
// pipelines expect), as JSON lines or as one human-readable line per entry.
import { pino, type Logger } from 'pino';
import { standardOutputWriter } from './log-writer.ts';

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
 * Without a destination, standard output (log-writer.ts): lines kept in order and written in batches without
 * blocking, so a slow reader of the pipe (the container runtime, a test harness) never holds up a reconcile; what is
 * still waiting when the process exits (SIGTERM, a crash) is written then, and only SIGKILL can lose the last few
 * lines. A reader that stops reading altogether costs at most about 1 MB of waiting lines; past that, lines are
 * dropped, and a warning says how many once the reader is back.
 */
export function createLogger(options: LoggerOptions): Logger {
  // onDropped runs from a later turn of the event loop, once `logger` is set.
  const out =
    options.destination ?? standardOutputWriter({ onDropped: (count) => logger.warn({ dropped: count }, 'log lines dropped: standard output was not read') });
  const logger: Logger = pino(
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
  return logger;
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
