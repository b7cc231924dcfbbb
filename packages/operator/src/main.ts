#!/usr/bin/env node
// The composition root: reads flags and environment once, builds { kube, git, clock, logger, metrics }
// and hands them to the command. Nothing deeper reads process.env.
import { KubeConfig } from '@kubernetes/client-node';
import { TemplateCache } from '@syncline/render';
import { createGitSource } from '@syncline/source-git';
import { hostname, homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { runCli } from './cli.ts';
import { createEventRecorder } from './kube/events.ts';
import { createApplyClients } from './kube/identity.ts';
import { createKubeRest } from './kube/rest.ts';
import { startManager } from './manager.ts';
import { startMirrorController } from './mirror/controller.ts';
import { DEFAULT_MIRROR_PREFIX, StalePolicy, mirrorKeys, parseMirrorSourceNamespaces } from './mirror/index.ts';
import { DEFAULT_INTERVAL_BOUNDS } from './reconcile/configsync.ts';
import { parseDuration } from './reconcile/duration.ts';
import { createMetrics } from './metrics.ts';
import { startProbeServer } from './server.ts';
import { parseShard, shardLeaseName, shardedWaker } from './shard.ts';
import { startWebhookServer, type WebhookServer } from './webhook/receiver.ts';
import { createWebhookSecrets, parseSecretRef } from './webhook/secrets.ts';
import { createWaker } from './webhook/wake.ts';

const usage = `syncline — keeps Kubernetes clusters equal to what Git says

Usage:
  syncline run [flags]                          run the operator
  syncline render PATH [--values F]... [--target NAME] [--namespace NS] [--set k=v]...
                                                render templates locally (no cluster)
  syncline diff NAME [-n NS]                    what a sync would change, without writing
  syncline status [NAME] [-n NS]                status of ConfigSyncs (with NAME: each target and its cluster)
  syncline status --mirrors [-n NS] [--mirror-prefix P] [--mirror-source-namespaces GLOBS]
                                                mirroring sources → replicas (synced, stale, conflict, missing)
  syncline clusters [-n NS]                     RemoteClusters: reachability, version, last probe
  syncline failover NAME [-n NS] [--wait]       promote a NamespaceReplication's standby (workloads up)
  syncline failback NAME [-n NS] [--wait]       back to replicating, standby workloads at zero
  syncline reconcile NAME [-n NS]               request an immediate sync
  syncline rollback NAME [-n NS] (--to SHA | --steps N)
                                                pin the revision to an earlier commit

Flags of run:
  --kubeconfig PATH           default $KUBECONFIG, then in-cluster, then ~/.kube/config
  --namespace NS              watch ConfigSyncs in one namespace only (default: all)
  --leader-elect              elect a leader on a Lease (default true when --replicas > 1 in the chart)
  --leader-election-namespace NS   default: the pod's namespace or "default"
  --leader-election-id NAME   the Lease's name (default syncline-leader; with --shard S: syncline-leader-S)
  --shard NAME                run one shard: only the ConfigSyncs, ManifestSyncs, NamespaceReplications and
                              RemoteClusters labelled syncline.dev/shard=NAME (default: the default shard,
                              which takes the unlabelled ones). A named shard runs no mirroring
  --lease-duration SECONDS    how long a lease holds without renewal (default 15)
  --probe-addr HOST:PORT      /healthz, /readyz, /metrics (default 0.0.0.0:8080)
  --cache-dir DIR             git snapshot cache (default ~/.cache/syncline/snapshots)
  --cache-max-bytes N         snapshot cache bound (default 2 GiB)
  --concurrency N             ConfigSyncs reconciled at once (default 4)
  --operator-namespace NS     the operator's own namespace (default: $POD_NAMESPACE): a ManifestSync there
                              may copy a source from any namespace
  --mirror-prefix PREFIX      label/annotation prefix of mirroring (default syncline.dev; e.g.
                              mirrorverse.dev for objects labelled for Mirrorverse)
  --mirror on|off             label-driven mirroring of Secrets/ConfigMaps (default on). Its watches are
                              cluster-wide: --namespace scopes the ConfigSync/ManifestSync watches only
  --mirror-source-namespaces GLOBS   comma-separated names/globs of namespaces whose objects may be
                              mirroring sources (default: all)
  --mirror-stale delete|mark  replicas whose source is gone: deleted (default), or labelled
                              <prefix>/stale with a stale-since time and left
  --mirror-stale-ttl D        with --mirror-stale mark: delete stale replicas after this long (e.g. 24h;
                              empty: keep them)
  --mirror-resync D           reconcile every mirroring source this often even without events (default 10m)
  --min-refresh-interval D    shorter refresh intervals are raised to this, with an IntervalClamped
                              condition (default 10s; the API admits 1s to 168h)
  --default-service-account NAME   apply as this ServiceAccount when a sync names none
  --allow-insecure-http       accept http:// repositories (tests and demos only)
  --log-level LEVEL           debug, info, warn, error (default info)
  --webhook-addr HOST:PORT    Git push webhook receiver (default 0.0.0.0:9292; "off" disables). Endpoints:
                              POST /hooks/github  (X-Hub-Signature-256)   POST /hooks/gitlab (X-Gitlab-Token)
                              POST /hooks/gitea   (X-Gitea-Signature; also /hooks/forgejo)
                              POST /hooks/bitbucket (Cloud and Data Center, X-Hub-Signature: sha256=)
                              POST /hooks/generic {"repo": URL, "ref": "refs/heads/main"}
                                   (X-Syncline-Signature: sha256=HMAC-SHA256(body), X-Syncline-Delivery: ID)
  --webhook-secret [NS/]NAME  the Secret holding webhook secrets, one key per provider: github, gitlab,
                              gitea, bitbucket, generic (several values in one key, one per line, for
                              rotation). A provider without a key refuses every delivery (401). Re-read
                              every minute and when a signature fails. Default NS: the pod's namespace.
  --webhook-max-body-bytes N  larger deliveries are refused while streaming (default 1048576)
  --webhook-read-timeout S    seconds a sender has to deliver headers and body (default 10)
`;

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(usage);
    return command === undefined ? 2 : 0;
  }
  if (command !== 'run') return runCli(command, args, { env, loadKubeConfig: (path) => loadKubeConfig(path, env) });

  const { values: flags } = parseArgs({
    args: [...args],
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      'leader-elect': { type: 'boolean', default: false },
      'leader-election-namespace': { type: 'string' },
      'leader-election-id': { type: 'string', default: 'syncline-leader' },
      shard: { type: 'string' },
      'probe-addr': { type: 'string', default: '0.0.0.0:8080' },
      'cache-dir': { type: 'string' },
      'cache-max-bytes': { type: 'string' },
      concurrency: { type: 'string', default: '4' },
      'min-refresh-interval': { type: 'string', default: '10s' },
      'mirror-prefix': { type: 'string', default: DEFAULT_MIRROR_PREFIX },
      'operator-namespace': { type: 'string' },
      mirror: { type: 'string', default: 'on' },
      'mirror-source-namespaces': { type: 'string', default: '' },
      'mirror-stale': { type: 'string', default: 'delete' },
      'mirror-stale-ttl': { type: 'string' },
      'mirror-resync': { type: 'string', default: '10m' },
      'default-service-account': { type: 'string' },
      'allow-insecure-http': { type: 'boolean', default: false },
      'log-level': { type: 'string', default: 'info' },
      'lease-duration': { type: 'string', default: '15' },
      'webhook-addr': { type: 'string', default: '0.0.0.0:9292' },
      'webhook-secret': { type: 'string' },
      'webhook-max-body-bytes': { type: 'string', default: String(1024 * 1024) },
      'webhook-read-timeout': { type: 'string', default: '10' },
    },
    strict: true,
  });

  const shard = parseShard(flags.shard);
  const logger = pino({
    level: flags['log-level'],
    base: { pid: process.pid, shard: shard ?? 'default' },
    // Belt and braces: no credential-shaped field ever reaches a log line.
    redact: { paths: ['*.password', '*.token', '*.bearerToken', '*.authorization', '*.data', 'auth'], censor: '[redacted]' },
  });
  const kubeConfig = loadKubeConfig(flags.kubeconfig, env);
  const rest = await createKubeRest(kubeConfig, { userAgent: 'syncline-operator' });
  const clock = { now: () => new Date() };
  const metrics = createMetrics();
  // A named shard's series carry its name; the default shard's stay as they are (one operator = no label).
  if (shard !== undefined) metrics.registry.setDefaultLabels({ shard });
  const git = createGitSource({
    cacheDir: flags['cache-dir'] ?? join(env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'syncline', 'snapshots'),
    cacheMaxBytes: flags['cache-max-bytes'] !== undefined ? Number(flags['cache-max-bytes']) : undefined,
    allowInsecureHttp: flags['allow-insecure-http'],
    onFetch: (event) => metrics.gitCacheHits.inc({ outcome: event.cached ? 'hit' : 'miss' }),
  });
  const identity = `${hostname()}-${process.pid}`;
  const podNamespace = env['POD_NAMESPACE'];

  if (flags.mirror !== 'on' && flags.mirror !== 'off') throw new Error(`--mirror ${flags.mirror}: expected on or off`);
  if (flags['mirror-stale'] !== 'delete' && flags['mirror-stale'] !== 'mark') throw new Error(`--mirror-stale ${flags['mirror-stale']}: expected delete or mark`);
  const keys = mirrorKeys(flags['mirror-prefix']);
  const sourceNamespaces = parseMirrorSourceNamespaces(flags['mirror-source-namespaces']);
  const staleTtlMs = flags['mirror-stale-ttl'] === undefined || flags['mirror-stale-ttl'] === '' ? undefined : parseDuration(flags['mirror-stale-ttl']);
  const applyClient = createApplyClients({ kubeConfig, rest, clock });
  const events = createEventRecorder({ rest, component: 'syncline', host: identity, clock, onError: (error) => logger.debug({ err: String(error) }, 'could not record an event') });

  const shutdown = new AbortController();
  const manager = startManager({
    rest,
    git,
    applyClient,
    templates: new TemplateCache(),
    clock,
    logger,
    metrics,
    events,
    defaultServiceAccount: flags['default-service-account'],
    concurrency: Number(flags.concurrency),
    intervalBounds: { ...DEFAULT_INTERVAL_BOUNDS, minMs: parseDuration(flags['min-refresh-interval']) },
    mirrorKeys: keys,
    operatorNamespace: flags['operator-namespace'] ?? podNamespace,
    watchNamespace: flags.namespace,
    ...(shard === undefined ? {} : { shard }),
    leaderElection: flags['leader-elect']
      ? {
          namespace: flags['leader-election-namespace'] ?? podNamespace ?? 'default',
          name: shardLeaseName(flags['leader-election-id'], shard),
          identity,
          leaseDurationMs: Number(flags['lease-duration']) * 1000,
        }
      : undefined,
    onLostLeadership: () => {
      // Like controller-runtime: a replica that lost the lease exits and restarts as a follower.
      logger.error('lost leadership; exiting');
      shutdown.abort();
      process.exitCode = 1;
    },
  });
  // Mirroring works only while this replica leads (the manager's election); its watches run regardless, so
  // a follower is ready to take over and /readyz reports them.
  // Label-driven mirroring has no shard label of its own: the default shard runs it, named shards never do.
  const mirror =
    flags.mirror === 'on' && shard === undefined
      ? startMirrorController({
          rest,
          applyClient: () => applyClient(undefined),
          clock,
          logger,
          metrics,
          events,
          keys,
          sourceNamespaces,
          staleMode: flags['mirror-stale'] === 'mark' ? StalePolicy.Mark : StalePolicy.Delete,
          staleTtlMs,
          isLeader: () => manager.isLeader(),
          resyncMs: parseDuration(flags['mirror-resync']),
        })
      : undefined;
  const probes = await startProbeServer({ address: flags['probe-addr'], metrics, ready: () => manager.ready() && (mirror?.ready() ?? true), logger });
  let webhooks: WebhookServer | undefined;
  if (flags['webhook-addr'] !== 'off') {
    const ref = flags['webhook-secret'] === undefined ? undefined : parseSecretRef(flags['webhook-secret'], podNamespace ?? 'default');
    webhooks = await startWebhookServer({
      address: flags['webhook-addr'],
      // Without --webhook-secret no provider is configured and every delivery is refused.
      secrets: ref === undefined ? { get: () => Promise.resolve([]) } : createWebhookSecrets({ rest, ...ref }),
      // Every shard's ConfigSyncs: another shard's are woken through the API (the reconcile-request annotation).
      configSyncs: () => [...manager.configSyncs(), ...manager.otherShardConfigSyncs()],
      wake: shardedWaker(
        (key) => manager.inOtherShard(key),
        createWaker({ rest, isLeader: () => manager.isLeader(), enqueue: (key) => manager.enqueue(key), logger }),
        createWaker({ rest, isLeader: () => false, enqueue: () => undefined, logger }),
      ),
      logger,
      metrics,
      maxBodyBytes: Number(flags['webhook-max-body-bytes']),
      readTimeoutMs: Number(flags['webhook-read-timeout']) * 1000,
    });
  }
  logger.info({ probes: probes.address, webhooks: webhooks?.address ?? 'off', identity, leaderElection: flags['leader-elect'] }, 'syncline started');

  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    shutdown.signal.addEventListener('abort', stop, { once: true });
  });
  logger.info('shutting down');
  await webhooks?.close();
  await mirror?.stop();
  await manager.stop();
  await probes.close();
  logger.info('stopped');
  return typeof process.exitCode === 'number' ? process.exitCode : 0;
}

function loadKubeConfig(path: string | undefined, env: NodeJS.ProcessEnv): KubeConfig {
  const kc = new KubeConfig();
  if (path !== undefined) kc.loadFromFile(path);
  else if (env['KUBECONFIG'] !== undefined && env['KUBECONFIG'] !== '') kc.loadFromFile(env['KUBECONFIG']);
  else kc.loadFromDefault();
  return kc;
}

if (import.meta.main) {
  main(process.argv.slice(2), process.env).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    },
  );
}
