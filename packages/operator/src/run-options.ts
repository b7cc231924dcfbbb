// The flags of `syncline run`, validated once where they enter: commander hands over strings, this schema turns
// them into typed values (counts as integers, durations in milliseconds) or refuses them with errors that name
// the flag, before anything starts. `--concurrency 0` or `--lease-duration 15s` would otherwise start an
// operator whose queue never runs, noticed only when liveness fails minutes later.
import { z } from 'zod';
import { parseDuration } from '@syncline/runtime';

const count = (what: string, min: number) =>
  z.string().transform((text, context) => {
    const value = Number(text.trim());
    if (!/^\s*[0-9]+\s*$/.test(text) || !Number.isSafeInteger(value) || value < min) {
      context.addIssue({ code: 'custom', message: `must be ${what}: a whole number of at least ${min}, not ${JSON.stringify(text)}` });
      return z.NEVER;
    }
    return value;
  });

/** A Go-style duration (30s, 5m, 1h30m) → milliseconds, above zero. */
const duration = z.string().transform((text, context) => {
  let ms: number;
  try {
    ms = parseDuration(text.trim());
  } catch {
    context.addIssue({ code: 'custom', message: `must be a duration such as 30s, 5m or 1h30m, not ${JSON.stringify(text)}` });
    return z.NEVER;
  }
  if (ms <= 0) {
    context.addIssue({ code: 'custom', message: `must be longer than zero, not ${JSON.stringify(text)}` });
    return z.NEVER;
  }
  return ms;
});

/** `off`, or a duration in milliseconds. */
const durationOrOff = z.union([z.literal('off'), duration]);

/** `host:port` (port 0 picks a free one), `[ipv6]:port`, or `off` where the flag allows it. */
const address = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]*):([0-9]{1,5})$/, 'must be host:port, such as 0.0.0.0:8080')
  .refine((text) => Number(text.slice(text.lastIndexOf(':') + 1)) <= 65_535, 'must have a port of at most 65535');
const addressOrOff = z.union([z.literal('off'), address]);

export const RunOptionsSchema = z.object({
  kubeconfig: z.string().optional(),
  context: z.string().optional(),
  namespace: z.string().optional(),
  secretNamespaces: z.string().optional(),
  leaderElect: z.boolean().optional(),
  leaderElectionNamespace: z.string().optional(),
  leaderElectionId: z.string().min(1, 'must not be empty'),
  shard: z.string().optional(),
  /** Milliseconds (the flag is in seconds). */
  leaseDuration: count('a number of seconds', 1).transform((seconds) => seconds * 1000),
  probeAddr: address,
  cacheDir: z.string().optional(),
  cacheMaxBytes: count('a number of bytes', 1).optional(),
  renderEngine: z.string().optional(),
  /** Milliseconds. */
  renderTimeout: duration,
  /** MiB. */
  renderMemoryLimit: count('a number of MiB', 64),
  concurrency: count('the number of reconciles at once', 1),
  watchBudget: count('a number of watch streams', 1),
  /** Connections to the API server for ordinary requests, per client (watches have their own). */
  apiConnections: count('a number of connections', 1),
  /** Milliseconds. */
  stallTimeout: duration,
  /** Milliseconds. */
  shutdownTimeout: duration,
  operatorNamespace: z.string().optional(),
  trustedNamespaces: z.string().optional(),
  mirrorPrefix: z.string().min(1, 'must not be empty'),
  mirror: z.enum(['on', 'off']),
  mirrorSourceNamespaces: z.string().optional(),
  mirrorStale: z.enum(['delete', 'mark']),
  /** Milliseconds; undefined (or the empty flag): stale replicas are kept. */
  mirrorStaleTtl: z
    .string()
    .optional()
    .transform((text) => (text === undefined || text.trim() === '' ? undefined : text))
    .pipe(duration.optional()),
  /** Milliseconds. */
  mirrorResync: duration,
  /** Milliseconds. */
  minRefreshInterval: duration,
  defaultServiceAccount: z.string().optional(),
  allowInsecureHttp: z.boolean().optional(),
  sopsAllowEnvironmentCredentials: z.boolean().optional(),
  sopsKmsEndpoint: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal']),
  logFormat: z.enum(['json', 'text']),
  webhookAddr: addressOrOff,
  uiAddr: addressOrOff,
  uiOidcIssuer: z.string().optional(),
  uiOidcClientId: z.string().optional(),
  uiOidcClientSecret: z.string().optional(),
  uiOidcRedirectUrl: z.string().optional(),
  uiOidcUsernameClaim: z.string(),
  uiOidcUsernamePrefix: z.string().optional(),
  uiOidcGroupsClaim: z.string(),
  uiOidcGroupsPrefix: z.string(),
  uiAnonymous: z.boolean().optional(),
  webhookSecret: z.string().optional(),
  webhookMaxBodyBytes: count('a number of bytes', 1),
  /** Milliseconds (the flag is in seconds). */
  webhookReadTimeout: count('a number of seconds', 1).transform((seconds) => seconds * 1000),
  /** Milliseconds, or off. */
  drHeartbeatInterval: durationOrOff,
  /** Milliseconds, off, or undefined (off). */
  drAutoFailoverGrace: durationOrOff.optional(),
  drAllowStandbyNamespaces: z.string().optional(),
});

/** The flags of `syncline run` as commander hands them over (camelCase strings). */
export type RunFlags = z.input<typeof RunOptionsSchema>;
/** The flags of `syncline run`, validated and typed. */
export type RunOptions = z.output<typeof RunOptionsSchema>;

/** `leaseDuration` → `--lease-duration`. */
const flagName = (key: PropertyKey): string => `--${String(key).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** Validates every flag at once: the typed options, or one line per bad flag, naming it. */
export function parseRunOptions(flags: RunFlags): { ok: true; options: RunOptions } | { ok: false; errors: string[] } {
  const parsed = RunOptionsSchema.safeParse(flags);
  if (parsed.success) return { ok: true, options: parsed.data };
  const errors = parsed.error.issues.map((issue) => {
    const flag = issue.path[0] === undefined ? 'syncline run' : flagName(issue.path[0]);
    const message = issue.code === 'invalid_union' || issue.code === 'invalid_value' ? describeChoice(issue, flags) : issue.message;
    return `${flag} ${message}`;
  });
  return { ok: false, errors: [...new Set(errors)] };
}

/** A union or enum refused: what it accepts, as a person reads it. */
function describeChoice(issue: z.core.$ZodIssue, flags: RunFlags): string {
  const value = issue.path[0] === undefined ? undefined : (flags as Record<PropertyKey, unknown>)[issue.path[0]];
  if (issue.code === 'invalid_value') return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, not ${JSON.stringify(value)}`;
  if (issue.code === 'invalid_union') {
    // The branch that is not the literal `off` says what was wrong with the value.
    const inner = issue.errors.flat().find((i) => i.code !== 'invalid_value');
    return `must be off or ${inner?.message.replace(/^must be /, '') ?? 'valid'}`;
  }
  return issue.message;
}
