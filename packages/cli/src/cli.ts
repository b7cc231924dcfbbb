// The `syncline` command line: every subcommand (run, render, diff, get, status, clusters, events, reconcile,
// suspend, resume, rollback, trace, check, failover, failback, version, completion, dr, confirm-prune) parsed by commander with kubectl's conventions: -h/--help, --version, -n/--namespace,
// -A/--all-namespaces, --context, --kubeconfig (and KUBECONFIG=a:b merged), -o table|json|yaml, "No
// resources found", errors as kubectl words them (no REST paths).
//
// Exit codes: 0 success; 1 error (a usage error, the API server refused, a wait that failed or timed out);
// diff: 0 no differences, 1 differences, 2 error (as kubectl diff and flux diff).
import { DEFAULT_WATCH_BUDGET, REQUEST_SOCKETS } from '@syncline/kube';
import { Argument, Command, CommanderError, Option } from 'commander';
import type * as Commands from './commands.ts';
import type * as Verbs from './verbs.ts';
import type * as Kinds from './kinds.ts';
import { SHELLS, completionScript, type Shell } from './completion.ts';
import { parseOutputFormat } from './output.ts';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as sea from 'node:sea';
import { DEFAULT_MIRROR_PREFIX } from '@syncline/operator/options';
import type { RunFlags, RunOptions } from '@syncline/operator/options';
import type { KubeFlags, ListFlags, Out } from './flags.ts';

export type { RunOptions } from '@syncline/operator/options';

export type CliContext = {
  readonly env: NodeJS.ProcessEnv;
  /** `syncline run`: the operator (main.ts); resolves with the exit code when it stops. */
  readonly runOperator: (options: RunOptions) => Promise<number>;
  readonly out?: (text: string) => void;
  readonly err?: (text: string) => void;
};

export type { KubeFlags, ListFlags, Out } from './flags.ts';

/** The subcommands' code, loaded when a command runs. */
const commands = (): Promise<typeof Commands> => import('./commands.ts');
const verbs = (): Promise<typeof Verbs> => import('./verbs.ts');
const kinds = (): Promise<typeof Kinds> => import('./kinds.ts');

/** The verbs that take a kind first (`get KIND`, `suspend KIND NAME`, …), for help and completion. */
const KIND_VERBS = ['get', 'suspend', 'resume', 'reconcile', 'events'];
/** Every kind by plural and short names, for help texts (written out: help loads no schemas; cli.test.ts checks it). */
export const KIND_HELP =
  'configsyncs (csync), manifestsyncs (msync), remoteclusters (rcluster), namespacereplications (nsrepl), namespacereplicationpolicies (drpolicy), notificationproviders (synprovider), notificationalerts (synalert)';

const EXIT_CODES = `
Exit codes:
  0  success (diff: no differences)
  1  error: bad usage, the API server refused, a --wait that failed or timed out (diff: differences found)
  2  diff only: an error (diff could not tell)
`;

/** Runs the command line `argv` (without node and the script) and resolves with the exit code. */
export async function runCli(argv: readonly string[], context: CliContext): Promise<number> {
  const out = context.out ?? ((text: string) => process.stdout.write(text));
  const err = context.err ?? ((text: string) => process.stderr.write(text));
  let code = 0;
  let active = '';
  const program = new Command('syncline')
    .description('Keeps Kubernetes clusters equal to what Git says.')
    .version(`syncline ${versionText()}`, '--version', 'print the version and exit')
    .helpOption('-h, --help', 'show help for a command')
    .helpCommand('help [command]', 'show help for a command')
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err })
    .showSuggestionAfterError(true)
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', `${EXIT_CODES}\nRun "syncline COMMAND --help" for a command's flags.\n`);
  program.hook('preSubcommand', (_program, sub) => {
    active = sub.name();
  });

  addRunCommand(program, context, (c) => (code = c));
  addRenderCommand(program, context, { out, err }, (c) => (code = c));
  addDiffCommand(program, context, { out, err }, (c) => (code = c));
  addKindVerbs(program, context, { out, err }, (c) => (code = c));
  addSyncCommands(program, context, { out, err }, (c) => (code = c));
  addTraceAndCheck(program, context, { out, err }, (c) => (code = c));
  addDrCommands(program, context, { out, err }, (c) => (code = c));
  addVersionAndCompletion(program, context, { out, err }, (c) => (code = c));
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (error) {
    const isDiff = active === 'diff';
    if (error instanceof CommanderError) {
      // Help and --version exit 0; commander has printed the usage error already.
      if (error.exitCode === 0) return 0;
      if (error.code === 'commander.help' || error.code === 'commander.executeSubCommandAsync') return 1;
      return isDiff ? 2 : 1;
    }
    err(`${formatError(error)}\n`);
    return isDiff ? 2 : 1;
  }
}

/** render: templates rendered locally, as the operator would. */
function addRenderCommand(program: Command, context: CliContext, io: { out: Out; err: Out }, done: (code: number) => void): void {
  const { out } = io;
  program
    .command('render')
    .description('render templates locally, as the operator would (no cluster)')
    .argument('<path>', 'a template file or a directory of templates')
    .option('-f, --values <file>', 'a values file (repeatable; later files win)', collect, [])
    .option('--set <key=value>', 'a value, e.g. image.tag=v2 (repeatable; wins over --values)', collect, [])
    .option('--target <name>', 'the target name templates see', 'local')
    .option('-n, --namespace <ns>', 'the target namespace templates see', 'default')
    .addOption(
      new Option('-o, --output <format>', 'yaml (documents) or json (one object, or a List, as kubectl prints)').choices(['yaml', 'json']).default('yaml'),
    )
    .addOption(
      new Option(
        '--engine <name>',
        'render with this engine (default: kustomize when the path holds a kustomization.yaml, helm when it holds a Chart.yaml, else Handlebars)',
      ).choices(['kustomize', 'helm', 'jsonnet']),
    )
    .option(
      '--repo-root <dir>',
      'the repository root an engine may read (overlays reach bases elsewhere in it; default: the nearest directory above the path holding .git, else the path)',
    )
    .option('--release-name <name>', 'helm: the release name', 'local')
    .option('-J, --jpath <dir>', 'jsonnet: a library path, relative to --repo-root (repeatable)', collect, [])
    .option('-V, --ext-str <key=value>', 'jsonnet: an external variable (repeatable)', collect, [])
    .option('-A, --tla-str <key=value>', 'jsonnet: a top-level argument (repeatable)', collect, [])
    .option('--render-engine <file>', 'the syncline-render binary (default: $SYNCLINE_RENDER_ENGINE, then /usr/local/bin/syncline-render)')
    .action(
      async (
        path: string,
        flags: {
          values: string[];
          set: string[];
          target: string;
          namespace: string;
          engine?: 'kustomize' | 'helm' | 'jsonnet';
          repoRoot?: string;
          releaseName: string;
          jpath: string[];
          extStr: string[];
          tlaStr: string[];
          renderEngine?: string;
          output: 'yaml' | 'json';
        },
      ) => {
        done(await (await commands()).renderCommand(path, { ...flags, env: context.env }, out));
      },
    );
}

/** diff: what a sync of a ConfigSync would change. */
function addDiffCommand(program: Command, context: CliContext, io: { out: Out; err: Out }, done: (code: number) => void): void {
  const { out, err } = io;
  kubeFlags(
    program
      .command('diff')
      .description('show what a sync of a ConfigSync would change: a unified YAML diff of live vs desired per object (Secret values masked)')
      .argument('<name>', 'the ConfigSync')
      .option(
        '--path <dir>',
        "a local checkout of the ConfigSync's repository (its root): diff its working tree, uncommitted edits included, instead of the revision in Git",
      )
      .option('--allow-insecure-http', 'accept an http:// repository (tests and demos only)')
      .option(
        '--render-engine <file>',
        'the syncline-render binary, for syncs rendered by Kustomize, Helm or Jsonnet (default: $SYNCLINE_RENDER_ENGINE, then /usr/local/bin/syncline-render)',
      ),
  ).action(async (name: string, flags: KubeFlags & { allowInsecureHttp?: boolean; path?: string; renderEngine?: string }) => {
    const c = await commands();
    const kube = await c.connect(flags, context.env);
    done(
      await c.diffCommand({
        ...kube,
        name,
        out,
        err,
        allowInsecureHttp: flags.allowInsecureHttp === true,
        localPath: flags.path,
        renderEngine: flags.renderEngine,
        env: context.env,
      }),
    );
  });
}

/** status, clusters, reconcile and rollback: the ConfigSync commands that read or nudge a sync. */
function addSyncCommands(program: Command, context: CliContext, io: { out: Out; err: Out }, done: (code: number) => void): void {
  const { out, err } = io;
  listFlags(
    kubeFlags(
      program
        .command('status')
        .description('status of ConfigSyncs (with NAME: each target and its cluster)')
        .argument('[name]', 'one ConfigSync')
        .option('--mirrors', 'mirroring sources and their replicas (synced, stale, conflict, missing) instead')
        .option('--mirror-prefix <prefix>', 'label/annotation prefix of mirroring', DEFAULT_MIRROR_PREFIX)
        .option('--mirror-source-namespaces <globs>', 'namespaces whose objects may be mirroring sources (comma-separated globs)')
        .option(
          '--trusted-namespaces <ns,...>',
          "the operator's --trusted-namespaces and its own namespace: their sources need no consent from the namespaces they target",
        ),
    ),
  ).action(
    async (
      name: string | undefined,
      flags: ListFlags & { mirrors?: boolean; mirrorPrefix: string; mirrorSourceNamespaces?: string; trustedNamespaces?: string },
    ) => {
      const c = await commands();
      const kube = await c.connect(flags, context.env);
      done(flags.mirrors === true ? await c.mirrorsCommand(kube, flags, out, err) : await c.statusCommand(kube, name, flags, out, err));
    },
  );

  listFlags(kubeFlags(program.command('clusters').description('RemoteClusters: reachability, server version, last probe'))).action(async (flags: ListFlags) => {
    const c = await commands();
    const kube = await c.connect(flags, context.env);
    done(await c.clustersCommand(kube, flags, out, err));
  });

  kubeFlags(
    program
      .command('reconcile')
      .description(
        'request an immediate reconcile: `reconcile NAME` (a ConfigSync) or `reconcile KIND NAME`; with --wait (ConfigSync), wait for it and print the applied revision',
      )
      .argument('<kind-or-name>', `a ConfigSync's name, or the kind: ${KIND_HELP}`)
      .argument('[name]', 'the object, when a kind is given')
      .option('--wait', 'wait until the operator handled the request (ConfigSync only)')
      .option('--timeout <duration>', 'how long --wait waits, e.g. 30s, 2m', '2m'),
  ).action(async (first: string, second: string | undefined, flags: KubeFlags & { wait?: boolean; timeout: string }) => {
    const { info, name } = (await kinds()).kindAndName(first, second);
    const c = await commands();
    const kube = await c.connect(flags, context.env);
    if (info.kind === 'ConfigSync') done(await c.reconcileCommand(kube, name, flags, out, err));
    else if (flags.wait === true)
      throw new Error(
        `--wait is for ConfigSyncs only: a ${info.kind} does not record the requests it handled; watch it with: syncline get ${info.plural} ${name} -w`,
      );
    else done(await (await verbs()).requestReconcile(kube, info, name, out));
  });

  kubeFlags(
    program
      .command('rollback')
      .description('pin a ConfigSync to an earlier commit (set the revision back to a branch to follow it again)')
      .argument('<name>', 'the ConfigSync')
      .option('--to <sha>', 'this commit (full 40-character SHA)')
      .option('--steps <n>', 'N deploys back in status.history (deploys that rendered the same count once)'),
  ).action(async (name: string, flags: KubeFlags & { to?: string; steps?: string }) => {
    const c = await commands();
    const kube = await c.connect(flags, context.env);
    const object = await c.getConfigSync(kube, name);
    const revision = c.rollbackRevision(object, { to: flags.to, steps: flags.steps });
    await kube.rest.request({
      method: 'PATCH',
      path: c.configSyncPath(kube.namespace, name),
      contentType: 'application/merge-patch+json',
      body: { spec: { source: { git: { revision } } } },
    });
    out(`${kube.namespace}/${name}: revision pinned to ${revision} (set it back to a branch to follow it again)\n`);
  });
}

/** trace (which sync produced an object) and check (is Syncline installed and reachable). */
function addTraceAndCheck(program: Command, context: CliContext, io: { out: Out; err: Out }, done: (code: number) => void): void {
  const { out } = io;
  kubeFlags(
    program
      .command('trace')
      .description(
        "which sync (ConfigSync, ManifestSync, NamespaceReplication or mirroring), target, commit (SHA, message, author) and file produced an object, proven by the owner's inventory; exit 1 when it is not Syncline's",
      )
      .argument('<kind/name>', 'the object: KIND/NAME (or KIND NAME), the kind as kubectl takes it (deployment, configmaps, deployments.apps)')
      .argument('[name]', 'the name, when the kind is given alone')
      .option('--allow-insecure-http', 'read the commit from an http:// repository (tests and demos only)')
      .addOption(new Option('-o, --output <format>', 'output format').choices(['json', 'yaml'])),
  ).action(async (first: string, second: string | undefined, flags: KubeFlags & { allowInsecureHttp?: boolean; output?: 'json' | 'yaml' }) => {
    const trace = await import('./trace.ts');
    const kube = await (await commands()).connect(flags, context.env);
    done(
      await trace.traceCommand(
        kube,
        trace.traceTarget(first, second),
        { output: flags.output, env: context.env, allowInsecureHttp: flags.allowInsecureHttp === true },
        out,
      ),
    );
  });

  kubeFlags(
    program
      .command('check')
      .description(
        'check the cluster for Syncline (as flux check): Kubernetes version, CRDs installed and current, the operator reachable, your rights in the namespace; exit 1 when a check fails',
      )
      .option('--operator-namespace <ns>', "look for the operator's Deployments and leader Lease here only (default: every namespace you may list)")
      .option('--metrics-url <url>', "also check the operator's /metrics answers, e.g. http://127.0.0.1:8080/metrics (a port-forward)"),
  ).action(async (flags: KubeFlags & { operatorNamespace?: string; metricsUrl?: string }) => {
    const kube = await (await commands()).connect(flags, context.env);
    done(await (await import('./check.ts')).checkCommand(kube, { operatorNamespace: flags.operatorNamespace, metricsUrl: flags.metricsUrl }, out));
  });
}

/** failover, failback, dr status and confirm-prune: NamespaceReplication's disaster-recovery commands. */
function addDrCommands(program: Command, context: CliContext, io: { out: Out; err: Out }, done: (code: number) => void): void {
  const { out, err } = io;
  for (const command of ['failover', 'failback'] as const) {
    kubeFlags(
      program
        .command(command)
        .description(
          command === 'failover'
            ? "promote a NamespaceReplication's standby: stop replicating, scale workloads up. With --standby (the standby cluster's kubeconfig, the primary gone): promote the standby namespaces named, or all"
            : "back to replicating, standby workloads at zero. With --standby --reset-standby (the standby cluster's kubeconfig): clear a standby-side promotion so the primary replicates over it again",
        )
        .argument('[name-or-namespaces...]', 'the NamespaceReplication; with --standby, standby namespaces')
        .option('--standby', 'act on the standby cluster itself (its kubeconfig): no primary needed')
        .option('--wait', 'wait until the operator reports it done')
        .option('--timeout <duration>', 'how long --wait waits (e.g. 60s, 5m)', '60s'),
    )
      .addOption(
        command === 'failback'
          ? new Option(
              '--reset-standby',
              'with --standby: workloads to zero, the promotion record and heartbeats removed (what changed in the standby is overwritten by the primary)',
            )
          : new Option('--by <who>', 'with --standby: who promotes (recorded on the namespace; default $USER)'),
      )
      .action(async (names: string[], flags: KubeFlags & { wait?: boolean; timeout: string; standby?: boolean; resetStandby?: boolean; by?: string }) => {
        if (flags.standby !== true && names.length !== 1)
          throw new Error(`${command} needs exactly one NamespaceReplication name (or --standby with namespaces)`);
        const c = await commands();
        const kube = await c.connect(flags, context.env);
        if (flags.standby === true) {
          const dr = await import('./dr.ts');
          done(
            command === 'failover'
              ? await dr.standbyFailoverCommand(kube, names, { by: flags.by ?? context.env['USER'] ?? 'syncline-cli' }, out, err)
              : await dr.standbyFailbackCommand(kube, names, { reset: flags.resetStandby === true }, out, err),
          );
          return;
        }
        done(await c.failoverCommand(command, kube, names[0] ?? '', flags, out));
      });
  }

  listFlags(
    kubeFlags(
      program
        .command('dr')
        .description('disaster recovery: status of the standby namespaces, read from the standby cluster')
        .argument('<action>', 'status')
        .argument('[namespaces...]', 'standby namespaces (default: all)')
        .option('--standby', "read the standby cluster (its kubeconfig): promoted?, the primary's last heartbeat and its age, the last replicated change"),
    ),
  ).action(async (action: string, names: string[], flags: ListFlags & { standby?: boolean }) => {
    if (action !== 'status') throw new Error(`unknown dr action "${action}": the only one is status`);
    if (flags.standby !== true)
      throw new Error(
        "dr status reads the standby cluster: pass --standby with the standby's kubeconfig (the primary's view is syncline get/kubectl get namespacereplications)",
      );
    const c = await commands();
    const kube = await c.connect(flags, context.env);
    done(await (await import('./dr.ts')).drStatusCommand(kube, names, flags, out, err));
  });
  kubeFlags(
    program
      .command('confirm-prune')
      .description('confirm the deletion a NamespaceReplication holds back from its standby (exactly the held set; a changed set is held again)')
      .argument('<name>', 'the NamespaceReplication')
      .option('--token <token>', 'confirm only this held set (the token in its PruneHeld Event); refused when the set has changed')
      .option('--wait', 'wait until the operator has deleted it')
      .option('--timeout <duration>', 'how long --wait waits (e.g. 60s, 5m)', '60s'),
  ).action(async (name: string, flags: KubeFlags & { token?: string; wait?: boolean; timeout: string }) => {
    const c = await commands();
    const kube = await c.connect(flags, context.env);
    done(
      await (
        await import('./confirm-prune.ts')
      ).confirmPruneCommand({ rest: kube.rest, namespace: kube.namespace, name, token: flags.token, wait: flags.wait, timeout: flags.timeout, out }),
    );
  });
}

/** Every flag that takes a value, of every command except those the scripts handle themselves. */
function valueFlags(program: Command): string[] {
  const flags = program.commands.flatMap((c) => c.options.filter((o) => o.required || o.optional).flatMap((o) => [o.long, o.short]));
  const handled = new Set(['-n', '--namespace', '--context', '--kubeconfig']);
  return [...new Set(flags.filter((f): f is string => f !== undefined && !handled.has(f)))].sort();
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function kubeFlags(command: Command): Command {
  return command
    .option('-n, --namespace <ns>', "the namespace (default: the context's namespace, else default)")
    .option('--context <name>', 'the kubeconfig context to use')
    .option('--kubeconfig <file>', 'the kubeconfig file (default: $KUBECONFIG, several files merged as kubectl does, then ~/.kube/config, then in-cluster)');
}

function listFlags(
  command: Command,
  output: { formats: readonly string[]; parse?: (value: string) => unknown } = { formats: ['table', 'json', 'yaml'] },
): Command {
  const option = new Option('-o, --output <format>', `output format: ${output.formats.join(', ')}`).default('table');
  return command
    .option('-A, --all-namespaces', 'list across all namespaces')
    .addOption(output.parse === undefined ? option.choices(output.formats) : option.argParser(output.parse));
}

function addKindVerbs(program: Command, context: CliContext, io: { out: Out; err: Out }, done: (code: number) => void): void {
  listFlags(
    kubeFlags(
      program
        .command('get')
        .description(`list or show Syncline objects of a kind, with kubectl's columns (${KIND_HELP})`)
        .argument('<kind>', 'the kind (plural, singular or short name)')
        .argument('[name]', 'one object')
        .option('-l, --selector <selector>', 'label selector, e.g. team=a,tier!=db')
        .option('-w, --watch', 'after listing, print each change until interrupted')
        .option('--no-headers', 'leave out the header row'),
    ),
    {
      formats: [
        'table',
        'wide',
        'json',
        'yaml',
        'name',
        'jsonpath=TEMPLATE',
        'jsonpath-as-json=TEMPLATE',
        'jsonpath-file=FILE',
        'custom-columns=SPEC',
        'custom-columns-file=FILE',
      ],
      parse: parseOutputFormat,
    },
  ).action(
    async (
      kind: string,
      name: string | undefined,
      flags: Omit<ListFlags, 'output'> & { output: Verbs.GetFlags['output']; selector?: string; watch?: boolean; headers?: boolean },
    ) => {
      const info = (await kinds()).resolveKind(kind);
      const kube = await (await commands()).connect(flags, context.env);
      done(
        await (
          await verbs()
        ).getCommand(kube, info, name, { output: flags.output, selector: flags.selector, watch: flags.watch, noHeaders: flags.headers === false }, io),
      );
    },
  );

  for (const verb of ['suspend', 'resume'] as const) {
    kubeFlags(
      program
        .command(verb)
        .description(
          verb === 'suspend'
            ? 'suspend an object (spec.suspend: true): no fetch, apply, prune or copy until resumed; what it applied stays'
            : 'resume a suspended object (spec.suspend: false); it reconciles at once',
        )
        .argument('<kind>', 'configsyncs (csync), manifestsyncs (msync), namespacereplications (nsrepl)')
        .argument('<name>', 'the object'),
    ).action(async (kind: string, name: string, flags: KubeFlags) => {
      const info = (await kinds()).resolveKind(kind);
      const kube = await (await commands()).connect(flags, context.env);
      done(await (await verbs()).suspendCommand(kube, info, name, verb === 'suspend', io.out));
    });
  }

  listFlags(
    kubeFlags(
      program
        .command('events')
        .description("an object's Events, oldest first: `events NAME` (a ConfigSync) or `events KIND NAME`")
        .argument('<kind-or-name>', `a ConfigSync's name, or the kind: ${KIND_HELP}`)
        .argument('[name]', 'the object, when a kind is given'),
    ),
  ).action(async (first: string, second: string | undefined, flags: ListFlags) => {
    const { info, name } = (await kinds()).kindAndName(first, second);
    const kube = await (await commands()).connect(flags, context.env);
    done(await (await verbs()).eventsCommand(kube, info, name, { output: flags.output }, io));
  });
}

function addVersionAndCompletion(program: Command, context: CliContext, io: { out: Out; err: Out }, done: (code: number) => void): void {
  kubeFlags(
    program
      .command('version')
      .description("the client's version and the operator's (its Deployments, found by the chart's labels; in every namespace unless -n is given)")
      .option('--client', 'the client only: read no cluster')
      .addOption(new Option('-o, --output <format>', 'output format').choices(['json', 'yaml'])),
  ).action(async (flags: KubeFlags & { client?: boolean; output?: 'json' | 'yaml' }) => {
    const v = await verbs();
    let target: Verbs.Target | undefined;
    if (flags.client !== true) {
      try {
        target = await (await commands()).connect({ ...flags, allNamespaces: flags.namespace === undefined }, context.env);
      } catch (error) {
        io.err(`${formatError(error)}\n`);
      }
    }
    done(await v.versionCommand(versionText(), target, { output: flags.output }, io.out));
  });

  program
    .command('completion')
    .description('print a shell completion script: source <(syncline completion bash), source <(syncline completion zsh), syncline completion fish | source')
    .addArgument(new Argument('<shell>', 'the shell').choices(SHELLS))
    .action(async (shell: Shell) => {
      const { KINDS } = await kinds();
      const specs = program.commands.map((c) => ({
        name: c.name(),
        description: c.description(),
        flags: c.options.flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined)),
      }));
      io.out(
        completionScript(shell, {
          commands: specs,
          kinds: KINDS.flatMap((k) => [k.plural, ...k.names.filter((n) => n !== k.plural && n !== k.kind.toLowerCase())]),
          kindVerbs: KIND_VERBS,
          configSyncVerbs: ['status', 'diff', 'rollback'],
          valueFlags: valueFlags(program),
        }),
      );
      done(0);
    });
}

function addRunCommand(program: Command, context: CliContext, done: (code: number) => void): void {
  program
    .command('run')
    .description('run the operator')
    .option('--kubeconfig <file>', 'default $KUBECONFIG (several files merged), then ~/.kube/config, then in-cluster')
    .option('--context <name>', 'the kubeconfig context to use')
    .option('-n, --namespace <ns>', 'watch ConfigSyncs in one namespace only (default: all)')
    .option(
      '--sops-allow-environment-credentials',
      "let syncs without sops.aws-kms in their key Secret use the operator's own AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN) for KMS keys; default: never",
    )
    .option('--sops-kms-endpoint <url>', 'the AWS KMS endpoint to call instead of https://kms.<region>.amazonaws.com (a VPC endpoint; tests)')
    .option(
      '--secret-namespaces <ns,...>',
      'watch Secrets in these namespaces only, one watch each (for an operator without cluster-wide Secret rights; needs --mirror off; default: all)',
    )
    .option('--leader-elect', 'elect a leader on a Lease (the chart sets it when replicas > 1)')
    .option('--leader-election-namespace <ns>', 'the Lease\'s namespace (default: the pod\'s namespace or "default")')
    .option('--leader-election-id <name>', "the Lease's name (with --shard S: <name>-S)", 'syncline-leader')
    .option(
      '--shard <name>',
      'run one shard: only the ConfigSyncs, ManifestSyncs, NamespaceReplications and RemoteClusters labelled syncline.dev/shard=NAME (default: the default shard, which takes the unlabelled ones); a named shard runs no mirroring',
    )
    .option('--lease-duration <seconds>', 'how long a lease holds without renewal', '15')
    .option('--probe-addr <host:port>', '/healthz, /readyz, /metrics', '0.0.0.0:8080')
    .option('--cache-dir <dir>', 'Git snapshot cache (default ~/.cache/syncline/snapshots)')
    .option('--cache-max-bytes <n>', 'snapshot cache bound (default 2 GiB)')
    .option(
      '--render-engine <file>',
      'the syncline-render binary that renders Kustomize, Helm and Jsonnet (default: $SYNCLINE_RENDER_ENGINE, then /usr/local/bin/syncline-render when it exists)',
    )
    .option('--render-timeout <duration>', 'a Kustomize, Helm or Jsonnet render that takes longer is stopped (RenderFailed)', '30s')
    .option('--render-memory-limit <MiB>', 'heap of the render process; a render that needs more is stopped (RenderFailed)', '512')
    .option('--concurrency <n>', 'reconciles run at once (each mostly waits on the API server)', '32')
    .option(
      '--stall-timeout <duration>',
      '/healthz fails when a controller has had work and finished none of it for this long (it names the controller)',
      '10m',
    )
    .option(
      '--shutdown-timeout <duration>',
      "on SIGTERM, how long in-flight reconciles may drain before the process exits anyway (below the pod's terminationGracePeriodSeconds)",
      '25s',
    )
    .option(
      '--watch-budget <n>',
      'watch streams open at once, over every kind and cluster; past it the object that needs another watch reports WatchBudgetExceeded',
      String(DEFAULT_WATCH_BUDGET),
    )
    .option(
      '--api-connections <n>',
      "connections to the API server for ordinary requests (reads, applies, status writes, Events), per client: the operator's own and each identity it applies as; more wait for one within their deadline. Watches have connections of their own, one each",
      String(REQUEST_SOCKETS),
    )
    .option('--operator-namespace <ns>', "the operator's own namespace (default: $POD_NAMESPACE); trusted (see --trusted-namespaces)")
    .option(
      '--trusted-namespaces <ns,...>',
      "namespaces whose syncs, ManifestSyncs, NamespaceReplications and mirroring sources may write outside their own namespace with the operator's rights (names, comma-separated; the operator's namespace is always trusted). Elsewhere an object that names no serviceAccountName writes only into its own namespace",
    )
    .option(
      '--mirror-prefix <prefix>',
      'label/annotation prefix of mirroring (e.g. mirrorverse.dev for objects labelled for Mirrorverse)',
      DEFAULT_MIRROR_PREFIX,
    )
    .addOption(
      new Option(
        '--mirror <on|off>',
        'label-driven mirroring of Secrets/ConfigMaps; its watches are cluster-wide (--namespace scopes the ConfigSync/ManifestSync watches only)',
      )
        .choices(['on', 'off'])
        .default('on'),
    )
    .option('--mirror-source-namespaces <globs>', 'comma-separated names/globs of namespaces whose objects may be mirroring sources (default: all)')
    .addOption(
      new Option('--mirror-stale <policy>', 'replicas whose source is gone: deleted, or labelled <prefix>/stale with a stale-since time and left')
        .choices(['delete', 'mark'])
        .default('delete'),
    )
    .option('--mirror-stale-ttl <duration>', 'with --mirror-stale mark: delete stale replicas after this long (e.g. 24h; empty: keep them)')
    .option('--mirror-resync <duration>', 'reconcile every mirroring source this often even without events', '10m')
    .option(
      '--min-refresh-interval <duration>',
      'shorter refresh intervals are raised to this, with an IntervalClamped condition (the API admits 1s to 168h)',
      '10s',
    )
    .option('--default-service-account <name>', 'apply as this ServiceAccount when a sync names none')
    .option('--allow-insecure-http', 'accept http:// repositories (tests and demos only)')
    .option('--log-level <level>', 'debug, info, warn, error', 'info')
    .addOption(
      new Option('--log-format <format>', 'json: one JSON object a line (string level, RFC 3339 time); text: one human-readable line')
        .choices(['json', 'text'])
        .default('json'),
    )
    .option(
      '--webhook-addr <host:port>',
      'Git push webhook receiver ("off" disables): POST /hooks/github (X-Hub-Signature-256), /hooks/gitlab (X-Gitlab-Token), /hooks/gitea (X-Gitea-Signature; also /hooks/forgejo), /hooks/bitbucket (X-Hub-Signature: sha256=), /hooks/generic {"repo": URL, "ref": "refs/heads/main"} (X-Syncline-Signature: sha256=HMAC-SHA256(body), X-Syncline-Delivery: ID)',
      '0.0.0.0:9292',
    )
    .option(
      '--webhook-secret <[ns/]name>',
      "the Secret holding webhook secrets, one key per provider: github, gitlab, gitea, bitbucket, generic (several values in one key, one per line, for rotation). A provider without a key refuses every delivery (401). Re-read every minute and when a signature fails. Default namespace: the pod's",
    )
    .option('--ui-addr <host:port>', 'the web UI (sign-in with a Kubernetes token; views and actions follow the viewer\'s RBAC); "off" disables', 'off')
    .option(
      '--ui-oidc-issuer <url>',
      "web UI: also sign in with this OpenID Connect issuer (https; authorization code + PKCE); the id token's user and groups are checked with SubjectAccessReviews",
    )
    .option('--ui-oidc-client-id <id>', 'web UI: the OIDC client id')
    .option(
      '--ui-oidc-client-secret <[ns/]name[:key]>',
      "web UI: the Secret holding the OIDC client secret (key default client-secret; namespace default the pod's)",
    )
    .option('--ui-oidc-redirect-url <url>', 'web UI: the callback URL registered at the issuer (default: /oidc/callback at the address the browser used)')
    .option('--ui-oidc-username-claim <claim>', 'web UI: the id token claim that is the username, as kube-apiserver --oidc-username-claim', 'sub')
    .option('--ui-oidc-username-prefix <prefix>', 'web UI: as kube-apiserver --oidc-username-prefix ("-": none; default: issuer# unless the claim is email)')
    .option('--ui-oidc-groups-claim <claim>', 'web UI: the id token claim holding the groups, as kube-apiserver --oidc-groups-claim', 'groups')
    .option('--ui-oidc-groups-prefix <prefix>', 'web UI: as kube-apiserver --oidc-groups-prefix', '')
    .option(
      '--ui-anonymous',
      'web UI: viewers without a sign-in are system:anonymous (group system:unauthenticated) and see what RBAC grants that; off by default',
    )
    .option('--webhook-max-body-bytes <n>', 'larger deliveries are refused while streaming', String(1024 * 1024))
    .option('--webhook-read-timeout <seconds>', 'seconds a sender has to deliver headers and body', '10')
    .option(
      '--dr-heartbeat-interval <duration>',
      'renew a heartbeat Lease per NamespaceReplication in its standby namespace this often ("off": none); the standby reads it (syncline dr status --standby, automatic failover)',
      '10s',
    )
    .option(
      '--dr-auto-failover-grace <duration>',
      'standby side: promote a standby namespace whose heartbeat is older than this, unless held with the syncline.dev/dr-hold annotation (default off)',
    )
    .option(
      '--dr-allow-standby-namespaces <ns,...>',
      "system namespaces (kube-system, kube-public, kube-node-lease, default) a NamespaceReplication may nonetheless use as its standby, and automatic failover may promote (default none; the operator's own namespace never)",
    )
    .action(async (flags: RunFlags) => {
      // Every flag checked before anything starts; each bad one named (zod is loaded only for `run`).
      const parsed = (await import('@syncline/operator/options')).parseRunOptions(flags);
      if (!parsed.ok) {
        for (const line of parsed.errors) (context.err ?? ((text: string) => process.stderr.write(text)))(`error: ${line}\n`);
        done(1);
        return;
      }
      done(await context.runOperator(parsed.options));
    });
}

/**
 * An error as kubectl words it: `Error from server (NotFound): configsyncs.syncline.dev "web" not found`
 * for an API answer, `Unable to connect to the server: ...` when there was none, `error: ...` otherwise.
 * REST paths and HTTP details stay out.
 */
export function formatError(error: unknown): string {
  const message = stripRequest(error instanceof Error ? error.message : String(error));
  const api = asApiError(error);
  if (api !== undefined) {
    if (api.status === 0) return `Unable to connect to the server: ${message}`;
    return `Error from server (${api.reason === 'Unknown' || /^[0-9]+$/.test(api.reason) ? httpReason(api.status) : api.reason}): ${message}`;
  }
  const code = (error as { code?: unknown }).code;
  // Node's own codes, and undici's (the REST client's transport) for a connection the server closed or never opened
  if (
    typeof code === 'string' &&
    /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|EAI_AGAIN|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_|UND_ERR_SOCKET|UND_ERR_CONNECT)/.test(code)
  )
    return `Unable to connect to the server: ${message}`;
  return `error: ${message}`;
}

/** @syncline/apply's ApiError, recognised by shape (importing apply here would slow every --help). */
function asApiError(error: unknown): { status: number; reason: string } | undefined {
  if (!(error instanceof Error) || error.name !== 'ApiError') return undefined;
  const { status, reason } = error as Error & { status?: unknown; reason?: unknown };
  return typeof status === 'number' && typeof reason === 'string' ? { status, reason } : undefined;
}

/** Drops a leading `GET /apis/…: 404 ` (the REST request) from a message. */
function stripRequest(message: string): string {
  return message.replace(/(?:^|(?<=: ))(?:watch|GET|PUT|POST|PATCH|DELETE|HEAD) \/\S*: (?:[0-9]{3} )?/g, '');
}

function httpReason(status: number): string {
  const reasons: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    409: 'Conflict',
    410: 'Gone',
    422: 'Invalid',
    429: 'TooManyRequests',
    500: 'InternalError',
    503: 'ServiceUnavailable',
    504: 'Timeout',
  };
  return reasons[status] ?? `HTTP ${status}`;
}

/** `0.1.0 (commit abc123def456)` — the commit when this runs from a Git checkout. */
export function versionText(): string {
  // A single executable (a release's `syncline`) has no files beside it: its build wrote the version as an asset.
  if (sea.isSea()) return sea.getAsset('version', 'utf8').trim();
  const packageDir = join(import.meta.dirname, '..');
  const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
  const commit = gitCommit(join(packageDir, '..', '..'));
  return commit === undefined ? version : `${version} (commit ${commit.slice(0, 12)})`;
}

/** HEAD's commit read from .git (a worktree's .git file too), without running git; undefined if unknown. */
function gitCommit(root: string): string | undefined {
  try {
    let gitDir = join(root, '.git');
    if (!existsSync(gitDir)) return undefined;
    const asFile = (() => {
      try {
        return readFileSync(gitDir, 'utf8');
      } catch {
        return undefined;
      }
    })();
    if (asFile?.startsWith('gitdir:') === true) gitDir = resolve(root, asFile.slice('gitdir:'.length).trim());
    const head = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim();
    if (!head.startsWith('ref:')) return /^[0-9a-f]{40,64}$/.test(head) ? head : undefined;
    const ref = head.slice('ref:'.length).trim();
    const common = existsSync(join(gitDir, 'commondir')) ? resolve(gitDir, readFileSync(join(gitDir, 'commondir'), 'utf8').trim()) : gitDir;
    for (const dir of [gitDir, common]) if (existsSync(join(dir, ref))) return readFileSync(join(dir, ref), 'utf8').trim();
    const packed = existsSync(join(common, 'packed-refs')) ? readFileSync(join(common, 'packed-refs'), 'utf8') : '';
    return packed
      .split('\n')
      .find((line) => line.endsWith(` ${ref}`))
      ?.split(' ')[0];
  } catch {
    return undefined;
  }
}
