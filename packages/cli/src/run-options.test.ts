import { describe, expect, it } from 'vitest';
import { runCli } from './cli.ts';
import type { RunOptions } from '@syncline/operator/options';

/** `syncline run ARGS` without starting anything: the options the operator would get, or the errors and exit code. */
async function run(args: readonly string[]): Promise<{ code: number; options: RunOptions | undefined; err: string }> {
  let options: RunOptions | undefined;
  let err = '';
  const code = await runCli(['run', ...args], {
    env: {},
    runOperator: (given) => {
      options = given;
      return Promise.resolve(0);
    },
    out: () => undefined,
    err: (text) => (err += text),
  });
  return { code, options, err };
}

describe('syncline run: flags validated once, before anything starts', () => {
  it('given no flags, when parsed, then the defaults arrive typed: counts as numbers, durations in milliseconds', async () => {
    const { code, options } = await run([]);
    expect(code).toBe(0);
    expect(options).toMatchObject({
      concurrency: 32,
      apiConnections: 16,
      leaseDuration: 15_000,
      renderTimeout: 30_000,
      renderMemoryLimit: 512,
      stallTimeout: 600_000,
      shutdownTimeout: 25_000,
      mirrorResync: 600_000,
      minRefreshInterval: 10_000,
      webhookMaxBodyBytes: 1024 * 1024,
      webhookReadTimeout: 10_000,
      drHeartbeatInterval: 10_000,
      probeAddr: '0.0.0.0:8080',
      webhookAddr: '0.0.0.0:9292',
      uiAddr: 'off',
    });
    expect(options?.mirrorStaleTtl).toBeUndefined();
    expect(options?.drAutoFailoverGrace).toBeUndefined();
  });

  it('given valid values, then they are converted: off stays off, an empty stale TTL keeps replicas', async () => {
    const { options } = await run([
      '--concurrency',
      '4',
      '--dr-heartbeat-interval',
      'off',
      '--dr-auto-failover-grace',
      '1m30s',
      '--mirror-stale-ttl',
      '',
      '--cache-max-bytes',
      '1048576',
      '--ui-addr',
      '[::1]:0',
      '--api-connections',
      '8',
    ]);
    expect(options).toMatchObject({
      apiConnections: 8,
      concurrency: 4,
      drHeartbeatInterval: 'off',
      drAutoFailoverGrace: 90_000,
      cacheMaxBytes: 1_048_576,
      uiAddr: '[::1]:0',
    });
    expect(options?.mirrorStaleTtl).toBeUndefined();
  });

  it.each([
    [['--concurrency', '0'], '--concurrency must be the number of reconciles at once: a whole number of at least 1, not "0"'],
    [['--concurrency', '3x'], '--concurrency must be the number of reconciles at once: a whole number of at least 1, not "3x"'],
    [['--lease-duration', '15s'], '--lease-duration must be a number of seconds: a whole number of at least 1, not "15s"'],
    [['--watch-budget', '-1'], '--watch-budget must be a number of watch streams: a whole number of at least 1, not "-1"'],
    [['--api-connections', '0'], '--api-connections must be a number of connections: a whole number of at least 1, not "0"'],
    [['--render-memory-limit', '32'], '--render-memory-limit must be a number of MiB: a whole number of at least 64, not "32"'],
    [['--stall-timeout', '10 minutes'], '--stall-timeout must be a duration such as 30s, 5m or 1h30m, not "10 minutes"'],
    [['--min-refresh-interval', '0s'], '--min-refresh-interval must be longer than zero, not "0s"'],
    [['--dr-auto-failover-grace', 'soon'], '--dr-auto-failover-grace must be off or a duration such as 30s, 5m or 1h30m, not "soon"'],
    [['--probe-addr', '8080'], '--probe-addr must be host:port, such as 0.0.0.0:8080'],
    [['--webhook-addr', 'localhost:99999'], '--webhook-addr must have a port of at most 65535'],
    [['--log-level', 'verbose'], '--log-level must be one of "trace", "debug", "info", "warn", "error", "fatal", not "verbose"'],
    [['--sops-kms-endpoint', 'kms.local'], '--sops-kms-endpoint must be an http(s) URL'],
  ])('given %j, then it exits 1 naming the flag and starts nothing', async (args, message) => {
    const { code, options, err } = await run(args);
    expect(code).toBe(1);
    expect(options).toBeUndefined();
    expect(err).toBe(`error: ${message}\n`);
  });

  it('given several bad flags, then every one is named, each once', async () => {
    const { code, err } = await run(['--concurrency', '0', '--shutdown-timeout', 'x', '--webhook-read-timeout', '0']);
    expect(code).toBe(1);
    expect(err.trim().split('\n')).toEqual([
      'error: --concurrency must be the number of reconciles at once: a whole number of at least 1, not "0"',
      'error: --shutdown-timeout must be a duration such as 30s, 5m or 1h30m, not "x"',
      'error: --webhook-read-timeout must be a number of seconds: a whole number of at least 1, not "0"',
    ]);
  });
});
