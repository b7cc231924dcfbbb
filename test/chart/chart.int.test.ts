// The Helm chart renders in both RBAC modes, passes `helm lint --strict`, passes the operator flags the
// operator accepts, and the test control plane accepts every object it renders (server-side dry run, after
// the CRDs are installed).
import type { KubernetesObject } from '@kubernetes/client-node';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, createKubeRest, type KubeRest } from '@syncline/operator';
import { startGitServer, startOperator } from '@syncline/test-support';
import { testKubeconfigPath, testNamespace, type TestNamespace } from '@syncline/test-support/kube';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { applyConfigSync, configMapData, configSync, eventually, installCrds, kc, readConfigSync, waitForReady } from '../e2e/harness.ts';
import { ensureHelm, runHelm } from './helm.ts';

const root = join(import.meta.dirname, '..', '..');
const chartDir = join(root, 'charts', 'syncline');
const mainPath = join(root, 'packages', 'cli', 'src', 'main.ts');

type Rendered = KubernetesObject & Record<string, unknown>;
type Rule = { apiGroups?: string[]; resources?: string[]; resourceNames?: string[]; verbs?: string[] };
type Container = {
  args: string[];
  securityContext: Record<string, unknown>;
  livenessProbe: { httpGet: { path: string } };
  readinessProbe: { httpGet: { path: string } };
  resources: { requests?: Record<string, string> };
  volumeMounts: { name: string; mountPath: string }[];
  ports: { name: string; containerPort: number }[];
};
type DeploymentShape = {
  spec: {
    replicas: number;
    template: {
      spec: { containers: Container[]; volumes: { name: string; emptyDir?: object }[]; securityContext: Record<string, unknown>; serviceAccountName: string };
    };
  };
};

const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;

/**
 * Every value the chart has, switched on, for the case that exercises every template branch.
 * operator.secretAccess=namespaced is a cluster-mode option (namespace mode refuses it): `everythingIn`.
 */
const everything = (namespace: string): string[] => [
  '--set',
  'metrics.serviceMonitor.enabled=true',
  '--set',
  'operator.sops.allowEnvironmentCredentials=true',
  '--set',
  'operator.sops.kmsEndpoint=https://kms.example.internal',
  '--set',
  'ui.enabled=true',
  '--set',
  'ui.anonymous=true',
  '--set',
  'ui.oidc.issuer=https://login.example.com',
  '--set',
  'ui.oidc.clientId=syncline',
  '--set',
  'ui.oidc.clientSecret.name=syncline-oidc',
  '--set',
  'ui.oidc.redirectUrl=https://syncline.example.com/oidc/callback',
  '--set',
  'ui.oidc.usernamePrefix=oidc:',
  '--set',
  'ui.oidc.groupsPrefix=oidc:',
  '--set',
  'ui.ingress.enabled=true',
  '--set',
  'ui.ingress.className=nginx',
  '--set',
  'ui.ingress.host=syncline.example.com',
  '--set',
  'ui.ingress.tls[0].secretName=syncline-ui-tls',
  '--set',
  'ui.ingress.tls[0].hosts[0]=syncline.example.com',
  '--set',
  'ui.httpRoute.enabled=true',
  '--set',
  'ui.httpRoute.parentRefs[0].name=public',
  '--set',
  'ui.httpRoute.parentRefs[0].namespace=gateway',
  '--set',
  'ui.httpRoute.hostnames[0]=syncline.example.com',
  '--set',
  'networkPolicy.ui.from[0].podSelector.matchLabels.app\\.kubernetes\\.io/name=ingress-nginx',
  '--set',
  'metrics.prometheusRule.enabled=true',
  '--set',
  'metrics.prometheusRule.labels.release=kube-prometheus-stack',
  '--set',
  'metrics.dashboard.enabled=true',
  '--set',
  'metrics.dashboard.annotations.grafana_folder=Syncline',
  '--set',
  `image.digest=${DIGEST}`,
  '--set',
  'rbac.serviceAccountTokens.names[0]=syncline-deployer',
  '--set',
  `rbac.serviceAccountTokens.namespaces[0]=${namespace}`,
  '--set',
  'rbac.aggregation.edit=true',
  '--set',
  'extraVolumes[0].name=git-ca',
  '--set',
  'extraVolumes[0].configMap.name=corp-ca',
  '--set',
  'extraVolumeMounts[0].name=git-ca',
  '--set',
  'extraVolumeMounts[0].mountPath=/etc/syncline/git-ca',
  '--set',
  'extraVolumeMounts[0].readOnly=true',
  '--set',
  'tolerations[0].key=dedicated',
  '--set',
  'tolerations[0].operator=Equal',
  '--set',
  'tolerations[0].value=platform',
  '--set',
  'tolerations[0].effect=NoSchedule',
  '--set',
  'topologySpreadConstraints[0].maxSkew=1',
  '--set',
  'topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone',
  '--set',
  'topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway',
  '--set',
  'terminationGracePeriodSeconds=45',
  '--set',
  'revisionHistoryLimit=5',
  '--set',
  'webhook.secretName=git-webhooks',
  '--set',
  'operator.kubeconfigSecret=remote-kubeconfig',
  '--set',
  'operator.defaultServiceAccount=deployer',
  '--set',
  'operator.trustedNamespaces[0]=platform',
  '--set',
  'operator.trustedNamespaces[1]=ops',
  '--set',
  'operator.allowInsecureHttp=true',
  '--set',
  `operator.watchNamespace=${namespace}`,
  '--set',
  'operator.logLevel=debug',
  '--set',
  'operator.dr.autoFailoverGrace=60s',
  '--set',
  'operator.dr.allowStandbyNamespaces={default}',
  '--set',
  `leaderElection.namespace=${namespace}`,
  '--set',
  'imagePullSecrets[0].name=registry',
  '--set',
  'podDisruptionBudget.minAvailable=2',
  '--set',
  'replicaCount=3',
  '--set',
  'webhook.bindAddress=::',
  '--set',
  'operator.secretAccess=namespaced',
  '--set',
  'operator.secretNamespaces[0]=default',
  '--set',
  'networkPolicy.enabled=true',
  '--set',
  'networkPolicy.metrics.from[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring',
  '--set',
  'networkPolicy.webhook.from[0].podSelector.matchLabels.app\\.kubernetes\\.io/name=ingress-nginx',
  '--set',
  'networkPolicy.egress.apiServer.cidrs[0]=10.0.0.1/32',
  '--set',
  'networkPolicy.egress.git.cidrs[0]=140.82.112.0/20',
  '--set',
  'networkPolicy.egress.extra[0].ports[0].port=8443',
  '--set',
  'shards={a,b}',
];

/** `everything` for one RBAC scope: namespace mode without the cluster-mode-only secretAccess=namespaced. */
const everythingIn = (scope: 'cluster' | 'namespace', namespace: string): string[] => {
  if (scope === 'cluster') return everything(namespace);
  const args = everything(namespace);
  const pairs = args.flatMap((arg, i) => (i % 2 === 1 ? [[args[i - 1] ?? '', arg] as const] : []));
  return [
    ...pairs.filter(([, value]) => !value.startsWith('operator.secretAccess') && !value.startsWith('operator.secretNamespaces')).flat(),
    '--set',
    'rbac.scope=namespace',
  ];
};

describe('charts/syncline', () => {
  let helm: string;
  let helmHome: string;
  let ns: TestNamespace;
  let rest: KubeRest;

  beforeAll(async () => {
    helm = await ensureHelm({ onProgress: (line) => console.log(`[helm] ${line}`) });
    helmHome = await mkdtemp(join(tmpdir(), 'syncline-helm-'));
    rest = await createKubeRest(kc, { userAgent: 'syncline-chart-test' });
    await installCrds();
    await installMonitoringStandIn(rest, { kind: 'ServiceMonitor', plural: 'servicemonitors' });
    await installMonitoringStandIn(rest, { kind: 'PrometheusRule', plural: 'prometheusrules' });
    await installMonitoringStandIn(rest, { kind: 'HTTPRoute', plural: 'httproutes', group: 'gateway.networking.k8s.io' });
    ns = await testNamespace({ prefix: 'chart' });
  }, 20 * 60_000);
  afterAll(async () => {
    await ns?.[Symbol.asyncDispose]();
    if (helmHome !== undefined) await rm(helmHome, { recursive: true, force: true });
  });

  const template = (...args: string[]): Rendered[] => {
    const result = runHelm(helm, ['template', 'syncline', chartDir, '--namespace', ns.name, '--include-crds', ...args], helmHome);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    return (parseYamlDocuments(result.stdout) as (Rendered | null)[]).filter((o): o is Rendered => o !== null);
  };
  /** What helm template prints when it refuses the values. */
  const templateError = (...args: string[]): string => {
    const result = runHelm(helm, ['template', 'syncline', chartDir, '--namespace', ns.name, ...args], helmHome);
    expect(result.status).not.toBe(0);
    return result.stderr;
  };
  const find = (objects: Rendered[], kind: string, name?: string): Rendered[] =>
    objects.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));
  const container = (objects: Rendered[]): Container => {
    const [deployment] = find(objects, 'Deployment') as unknown as DeploymentShape[];
    const first = deployment?.spec.template.spec.containers[0];
    if (first === undefined) throw new Error('no Deployment container rendered');
    return first;
  };
  const rulesOf = (objects: Rendered[], kind: 'Role' | 'ClusterRole'): Rule[] => find(objects, kind).flatMap((o) => (o['rules'] as Rule[] | undefined) ?? []);

  it('lints clean with --strict in both RBAC modes', () => {
    for (const args of [[], ['--set', 'rbac.scope=namespace'], everything(ns.name), everythingIn('namespace', ns.name)]) {
      const result = runHelm(helm, ['lint', '--strict', chartDir, ...args], helmHome);
      expect(result.stdout + result.stderr, args.join(' ')).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(result.status).toBe(0);
    }
  });

  it('ships the generated CRDs unchanged', async () => {
    const generated = (await readdir(join(root, 'crds'))).sort();
    expect((await readdir(join(chartDir, 'crds'))).sort()).toEqual(generated);
    for (const file of generated) {
      expect(await readFile(join(chartDir, 'crds', file), 'utf8'), `charts/syncline/crds/${file} is stale: cp crds/*.yaml charts/syncline/crds/`).toBe(
        await readFile(join(root, 'crds', file), 'utf8'),
      );
    }
  });

  it('renders two leader-electing, non-root, read-only replicas with probes, requests and a writable cache', () => {
    const objects = template();
    const [deployment] = find(objects, 'Deployment') as unknown as DeploymentShape[];
    expect(deployment?.spec.replicas).toBe(2);
    const c = container(objects);
    expect(c.args).toEqual(
      expect.arrayContaining([
        'run',
        '--leader-elect',
        `--leader-election-namespace=${ns.name}`,
        '--probe-addr=0.0.0.0:8080',
        '--cache-dir=/var/cache/syncline',
      ]),
    );
    expect(c.args.some((a) => a.startsWith('--namespace'))).toBe(false);
    expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(deployment?.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    expect([c.livenessProbe.httpGet.path, c.readinessProbe.httpGet.path]).toEqual(['/healthz', '/readyz']);
    expect(c.ports).toEqual([
      { name: 'probes', containerPort: 8080, protocol: 'TCP' },
      { name: 'webhooks', containerPort: 9292, protocol: 'TCP' },
    ]);
    expect(Object.keys(c.resources.requests ?? {}).sort()).toEqual(['cpu', 'memory']);
    const cacheVolume = deployment?.spec.template.spec.volumes.find((v) => v.name === 'cache');
    expect(cacheVolume?.emptyDir).toBeDefined();
    expect(c.volumeMounts).toContainEqual({ name: 'cache', mountPath: '/var/cache/syncline' });
    const ports = (name: string): unknown => (find(objects, 'Service', name)[0]?.['spec'] as { ports?: unknown } | undefined)?.ports;
    expect(ports('syncline-metrics')).toEqual([{ name: 'metrics', port: 8080, targetPort: 'probes', protocol: 'TCP' }]);
    expect(ports('syncline-webhooks')).toEqual([{ name: 'webhooks', port: 9292, targetPort: 'webhooks', protocol: 'TCP' }]);
    expect(find(objects, 'CustomResourceDefinition').map((s) => s.metadata?.name)).toEqual([
      'configsyncs.syncline.dev',
      'manifestsyncs.syncline.dev',
      'namespacereplicationpolicies.syncline.dev',
      'namespacereplications.syncline.dev',
      'notificationalerts.syncline.dev',
      'notificationproviders.syncline.dev',
      'remoteclusters.syncline.dev',
    ]);
  });

  it('values.schema.json: a wrong type, a bad enum value or an unknown key fails helm template', () => {
    for (const [args, error] of [
      [['--set', 'replicaCount=two'], "at '/replicaCount': got string, want integer"],
      [['--set', 'webhook.prot=9000'], "at '/webhook': additional properties 'prot' not allowed"],
      [['--set', 'operator.logLevel=loud'], "at '/operator/logLevel'"],
      [['--set', 'networkPolicy.egress.git.ports[0]=ssh'], "at '/networkPolicy/egress/git/ports/0'"],
      [['--set', 'replicas=2'], "additional properties 'replicas' not allowed"],
    ] as const) {
      const result = runHelm(helm, ['template', 'syncline', chartDir, ...args], helmHome);
      expect(result.status, args.join(' ')).not.toBe(0);
      expect(result.stderr, args.join(' ')).toContain(error);
    }
  });

  it('binds the webhook receiver where webhook.bindAddress says (IPv6 in brackets)', () => {
    expect(container(template('--set', 'webhook.bindAddress=10.1.2.3')).args).toContain('--webhook-addr=10.1.2.3:9292');
    expect(container(template('--set', 'webhook.bindAddress=::')).args).toContain('--webhook-addr=[::]:9292');
  });

  it('networkPolicy: ingress to the metrics and webhook ports from their peers, egress to the API server, Git and DNS', () => {
    expect(find(template(), 'NetworkPolicy')).toEqual([]);
    const [policy] = find(template(...everything(ns.name)), 'NetworkPolicy');
    const spec = policy?.['spec'] as {
      policyTypes: string[];
      ingress: { ports: { port: number }[]; from?: unknown[] }[];
      egress: { ports: { port: number; protocol: string }[]; to?: unknown[] }[];
    };
    expect(spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(spec.ingress).toEqual([
      { ports: [{ port: 8080, protocol: 'TCP' }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }] },
      { ports: [{ port: 9292, protocol: 'TCP' }], from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'ingress-nginx' } } }] },
      { ports: [{ port: 9393, protocol: 'TCP' }], from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'ingress-nginx' } } }] },
    ]);
    expect(spec.egress.map((e) => [e.ports.map((p) => `${p.port}/${p.protocol}`), e.to])).toEqual([
      [['443/TCP', '6443/TCP'], [{ ipBlock: { cidr: '10.0.0.1/32' } }]],
      [['443/TCP', '22/TCP'], [{ ipBlock: { cidr: '140.82.112.0/20' } }]],
      [
        ['53/UDP', '53/TCP'],
        [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
      ],
      [['8443/undefined'], undefined],
    ]);
  });

  it('operator.secretAccess=namespaced: no cluster-wide Secret rights, a Role per namespace, one Secret watch per namespace, mirroring off', () => {
    const objects = template(
      '--set',
      'operator.secretAccess=namespaced',
      '--set',
      'operator.secretNamespaces[0]=team-a',
      '--set',
      'operator.secretNamespaces[1]=team-b',
    );
    const own = find(objects, 'ClusterRole', 'syncline').flatMap((o) => o['rules'] as Rule[]);
    expect(own.filter((rule) => rule.resources?.includes('secrets') === true)).toEqual([]);
    expect(own).toContainEqual({ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] });
    const secretRoles = find(objects, 'Role', 'syncline-secrets');
    expect(secretRoles.map((o) => o.metadata?.namespace).sort()).toEqual([ns.name, 'team-a', 'team-b'].sort());
    for (const role of secretRoles) expect(role['rules']).toEqual([{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] }]);
    expect(find(objects, 'RoleBinding', 'syncline-secrets')).toHaveLength(3);
    expect(container(objects).args).toEqual(expect.arrayContaining([`--secret-namespaces=${[ns.name, 'team-a', 'team-b'].sort().join(',')}`, '--mirror=off']));
    // the default keeps cluster-wide Secret reads (mirroring needs them)
    expect(container(template()).args.some((a) => a.startsWith('--secret-namespaces'))).toBe(false);
  });

  it('turns the webhook receiver off with its port and Service', () => {
    const objects = template('--set', 'webhook.enabled=false');
    expect(container(objects).args).toContain('--webhook-addr=off');
    expect(container(objects).ports.map((p) => p.name)).toEqual(['probes']);
    expect(find(objects, 'Service').map((s) => s.metadata?.name)).toEqual(['syncline-metrics']);
  });

  it('ui.enabled: --ui-addr, its port and Service, and a ClusterRole to create TokenReviews and SubjectAccessReviews; off by default', () => {
    const objects = template('--set', 'ui.enabled=true');
    expect(container(objects).args).toContain('--ui-addr=0.0.0.0:9393');
    expect(container(objects).ports.map((p) => p.name)).toContain('ui');
    expect(find(objects, 'Service', 'syncline-ui')[0]?.['spec']).toMatchObject({
      sessionAffinity: 'ClientIP',
      ports: [{ name: 'ui', port: 9393, targetPort: 'ui' }],
    });
    expect(find(objects, 'ClusterRole', 'syncline-ui')[0]?.['rules']).toEqual([
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    ]);
    const byDefault = template();
    expect(container(byDefault).args.some((a) => a.startsWith('--ui-addr'))).toBe(false);
    expect(find(byDefault, 'Service', 'syncline-ui')).toEqual([]);
    expect(find(objects, 'Ingress')).toEqual([]);
    expect(find(objects, 'HTTPRoute')).toEqual([]);
    expect(container(objects).args.filter((a) => a.startsWith('--ui-oidc') || a === '--ui-anonymous')).toEqual([]);
  });

  it('ui.oidc: the --ui-oidc-* flags, and a Role to read that one client-secret Secret; ui.anonymous only when set', () => {
    const objects = template(...everything(ns.name));
    expect(container(objects).args).toEqual(
      expect.arrayContaining([
        '--ui-anonymous',
        '--ui-oidc-issuer=https://login.example.com',
        '--ui-oidc-client-id=syncline',
        '--ui-oidc-client-secret=syncline-oidc:client-secret',
        '--ui-oidc-redirect-url=https://syncline.example.com/oidc/callback',
        '--ui-oidc-username-claim=sub',
        '--ui-oidc-username-prefix=oidc:',
        '--ui-oidc-groups-claim=groups',
        '--ui-oidc-groups-prefix=oidc:',
      ]),
    );
    expect(find(objects, 'Role', 'syncline-ui-oidc')[0]?.['rules']).toEqual([
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['syncline-oidc'], verbs: ['get'] },
    ]);
    expect(templateError('--set', 'ui.enabled=true', '--set', 'ui.oidc.issuer=https://login.example.com')).toContain('ui.oidc.issuer needs ui.oidc.clientId');
    expect(templateError('--set', 'ui.enabled=true', '--set', 'ui.oidc.issuer=http://login.example.com')).toContain('/ui/oidc/issuer');
  });

  it('ui.ingress and ui.httpRoute: an Ingress and an HTTPRoute to the UI Service; each refuses to render without its host or Gateway', () => {
    const objects = template(...everything(ns.name));
    expect(find(objects, 'Ingress', 'syncline-ui')[0]?.['spec']).toEqual({
      ingressClassName: 'nginx',
      tls: [{ secretName: 'syncline-ui-tls', hosts: ['syncline.example.com'] }],
      rules: [
        {
          host: 'syncline.example.com',
          http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'syncline-ui', port: { name: 'ui' } } } }] },
        },
      ],
    });
    expect(find(objects, 'HTTPRoute', 'syncline-ui')[0]?.['spec']).toEqual({
      parentRefs: [{ name: 'public', namespace: 'gateway' }],
      hostnames: ['syncline.example.com'],
      rules: [{ backendRefs: [{ name: 'syncline-ui', port: 9393 }] }],
    });
    // without ui.enabled neither renders
    expect(find(template('--set', 'ui.ingress.enabled=true', '--set', 'ui.ingress.host=x.example.com'), 'Ingress')).toEqual([]);
    expect(templateError('--set', 'ui.enabled=true', '--set', 'ui.ingress.enabled=true')).toContain('ui.ingress.enabled needs ui.ingress.host');
    expect(templateError('--set', 'ui.enabled=true', '--set', 'ui.httpRoute.enabled=true')).toContain('needs at least one ui.httpRoute.parentRefs');
  });

  it('renders one Deployment per shard: its own --shard, pods, Lease, metrics Service and PDB; the main one stays the default shard', () => {
    const objects = template('--set', 'shards={a,b}');
    const rendered = find(objects, 'Deployment');
    const deployments = rendered as unknown as DeploymentShape[];
    expect(rendered.map((d) => d.metadata?.name)).toEqual(['syncline', 'syncline-shard-a', 'syncline-shard-b']);
    const argsOf = (d: DeploymentShape): string[] => d.spec.template.spec.containers[0]?.args ?? [];
    const [main, a, b] = deployments;
    expect(argsOf(main as DeploymentShape).filter((arg) => arg.startsWith('--shard'))).toEqual([]);
    expect(argsOf(main as DeploymentShape)).toContain('--mirror=on');
    expect(argsOf(a as DeploymentShape)).toEqual(
      expect.arrayContaining(['--shard=a', '--leader-elect', '--leader-election-id=syncline-leader', '--mirror=off']),
    );
    expect(argsOf(b as DeploymentShape)).toContain('--shard=b');
    // the same pod spec otherwise
    const withoutShard = (d: DeploymentShape): string[] => argsOf(d).filter((arg) => !arg.startsWith('--shard') && !arg.startsWith('--mirror='));
    expect(withoutShard(a as DeploymentShape)).toEqual(withoutShard(main as DeploymentShape));
    expect((a as DeploymentShape).spec.replicas).toBe((main as DeploymentShape).spec.replicas);
    // no two Deployments' selectors overlap (each selector's labels are its own pods' labels)
    const selectors = rendered.map((d) => (d['spec'] as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels);
    const podLabels = rendered.map((d) => (d['spec'] as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels);
    selectors.forEach((selector, i) =>
      podLabels.forEach((labels, j) =>
        expect(
          Object.entries(selector).every(([k, v]) => labels[k] === v),
          `Deployment ${i} selects the pods of ${j}`,
        ).toBe(i === j),
      ),
    );
    // each shard's Lease (the flag suffixes the id) is one the Role lets it write
    expect(rulesOf(objects, 'Role')).toContainEqual({
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: ['syncline-leader', 'syncline-leader-a', 'syncline-leader-b'],
      verbs: ['get', 'update', 'patch'],
    });
    expect(find(objects, 'Service').map((s) => s.metadata?.name)).toEqual([
      'syncline-metrics',
      'syncline-shard-a-metrics',
      'syncline-shard-b-metrics',
      'syncline-webhooks',
    ]);
    expect(find(objects, 'PodDisruptionBudget').map((s) => s.metadata?.name)).toEqual(['syncline', 'syncline-shard-a', 'syncline-shard-b']);

    // a shard name that cannot be a label value, Lease or Deployment name suffix is refused
    for (const bad of ['Shard1', 'default']) {
      const result = runHelm(helm, ['template', 'syncline', chartDir, '--set', `shards={${bad}}`], helmHome);
      expect(result.status).not.toBe(0);
      expect(result.stderr).toMatch(/shards/);
    }
  });

  it('cluster mode: ClusterRoles for the operator and for what it syncs, the Lease in a Role', () => {
    const objects = template();
    expect(
      find(objects, 'ClusterRole')
        .map((o) => o.metadata?.name)
        .sort(),
    ).toEqual(['syncline', 'syncline-edit', 'syncline-manage', 'syncline-view']);
    expect(find(objects, 'Role').map((o) => o.metadata?.name)).toEqual(['syncline-leader-election']);
    const own = find(objects, 'ClusterRole', 'syncline').flatMap((o) => o['rules'] as Rule[]);
    expect(own).toContainEqual({
      apiGroups: ['syncline.dev'],
      resources: [
        'configsyncs/status',
        'manifestsyncs/status',
        'remoteclusters/status',
        'namespacereplications/status',
        'notificationproviders/status',
        'notificationalerts/status',
      ],
      verbs: ['get', 'patch', 'update'],
    });
    expect(own).toContainEqual({ apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] });
    // NamespaceReplicationPolicies: the replications they stand for are created and removed by the operator
    expect(own).toContainEqual({ apiGroups: ['syncline.dev'], resources: ['namespacereplicationpolicies/status'], verbs: ['get', 'patch', 'update'] });
    expect(own).toContainEqual({ apiGroups: ['syncline.dev'], resources: ['namespacereplications'], verbs: ['create', 'delete'] });
    // least privilege: the operator's own role writes nothing but its API, events and tokens
    for (const rule of own)
      if (rule.apiGroups?.includes('') === true && rule.resources?.includes('secrets') === true) expect(rule.verbs).toEqual(['get', 'list', 'watch']);
    expect(rulesOf(objects, 'Role')).toContainEqual({
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: ['syncline-leader'],
      verbs: ['get', 'update', 'patch'],
    });

    // restricting what it may sync: the manage role follows rbac.manage.rules, and none at all is allowed
    const narrowed = template(
      '--set',
      'rbac.manage.rules[0].apiGroups[0]=apps',
      '--set',
      'rbac.manage.rules[0].resources[0]=deployments',
      '--set',
      'rbac.manage.rules[0].verbs[0]=patch',
    );
    const bindAndEscalate = { apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles', 'clusterroles'], verbs: ['bind', 'escalate'] };
    expect(find(narrowed, 'ClusterRole', 'syncline-manage')[0]?.['rules']).toEqual([
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['patch'] },
      bindAndEscalate,
    ]);
    // syncs may apply RBAC beyond the operator's verbs unless the narrower install is asked for
    const noEscalation = template('--set', 'rbac.manage.bindAndEscalate=false');
    expect(rulesOf(noEscalation, 'ClusterRole')).not.toContainEqual(bindAndEscalate);
    expect(rulesOf(template('--set', 'rbac.scope=namespace'), 'Role')).toContainEqual(bindAndEscalate);
    const none = template('--set', 'rbac.manage.rules=null');
    expect(
      find(none, 'ClusterRole')
        .map((o) => o.metadata?.name)
        .sort(),
    ).toEqual(['syncline', 'syncline-edit', 'syncline-view']);
    expect(find(none, 'ClusterRoleBinding').map((o) => o.metadata?.name)).toEqual(['syncline']);
  });

  it('namespace mode: no cluster-wide rights, and the operator watches its namespace only', () => {
    const objects = template('--set', 'rbac.scope=namespace');
    expect(find(objects, 'ClusterRole')).toEqual([]);
    expect(find(objects, 'ClusterRoleBinding')).toEqual([]);
    expect(
      find(objects, 'Role')
        .map((o) => [o.metadata?.name, o.metadata?.namespace])
        .sort(),
    ).toEqual([
      ['syncline', ns.name],
      ['syncline-leader-election', ns.name],
    ]);
    expect(rulesOf(objects, 'Role')).toContainEqual({
      apiGroups: ['syncline.dev'],
      resources: ['configsyncs', 'manifestsyncs', 'remoteclusters', 'namespacereplications', 'notificationproviders', 'notificationalerts'],
      verbs: ['get', 'list', 'watch', 'patch', 'update'],
    });
    expect(container(objects).args).toContain(`--namespace=${ns.name}`);
    expect(() => template('--set', 'rbac.scope=everywhere')).toThrow();
  });

  it('has a value for every flag of `syncline run`, and passes only flags the operator knows', () => {
    const usage = spawnSync(process.execPath, [mainPath, 'run', '--help'], { encoding: 'utf8' }).stdout;
    // --context picks a context of a kubeconfig for a person at a terminal; the chart's kubeconfig Secret
    // (operator.kubeconfigSecret) names its cluster by its current-context.
    const runFlags = [...usage.slice(usage.indexOf('Options:')).matchAll(/^ {2}(?:-[a-zA-Z], )?(--[a-z-]+)/gm)]
      .map((m) => m[1] ?? '')
      .filter((flag) => !['--help', '--context'].includes(flag));
    expect(runFlags.length).toBeGreaterThan(8);
    // every Deployment's flags: --shard is passed by the named shards' Deployments only
    const args = (find(template(...everything(ns.name)), 'Deployment') as unknown as DeploymentShape[]).flatMap(
      (d) => d.spec.template.spec.containers[0]?.args ?? [],
    );
    for (const flag of runFlags)
      expect(
        args.some((a) => a === flag || a.startsWith(`${flag}=`)),
        `no value passes ${flag}`,
      ).toBe(true);

    // given the default and namespace-mode args, when the real CLI parses them, then it accepts them (it
    // gets as far as reading the kubeconfig we point at nothing)
    const shardDeployment = find(template('--set', 'shards={a}'), 'Deployment', 'syncline-shard-a') as unknown as DeploymentShape[];
    for (const objects of [
      template(),
      template('--set', 'rbac.scope=namespace'),
      template('--set', 'operator.secretAccess=namespaced'),
      shardDeployment as unknown as Rendered[],
    ]) {
      const rendered = container(objects).args;
      const run = spawnSync(process.execPath, [mainPath, ...rendered, '--kubeconfig', join(helmHome, 'no-such-kubeconfig')], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(run.stderr).not.toMatch(/unknown option|ERR_PARSE_ARGS/i);
      expect(run.stderr).toContain('no-such-kubeconfig');
    }
  });

  it("namespace mode grants enough: the operator, as the chart's ServiceAccount, syncs a ConfigSync", async () => {
    // given the chart's ServiceAccount and namespace-mode RBAC applied for real (the Deployment itself needs
    // a kubelet, which the test control plane has not: the operator runs here, with the pod's rights)
    await using tenant = await testNamespace({ prefix: 'chart-rbac' });
    const objects = template('--namespace', tenant.name, '--set', 'rbac.scope=namespace');
    for (const object of objects.filter((o) => ['ServiceAccount', 'Role', 'RoleBinding'].includes(o.kind ?? ''))) {
      await serverSideApply(rest, object, tenant.name);
    }
    const token = (
      await rest.request<{ status: { token: string } }>({
        method: 'POST',
        path: `/api/v1/namespaces/${tenant.name}/serviceaccounts/syncline/token`,
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
      })
    ).status.token;
    const kubeconfig = join(helmHome, `${tenant.name}.kubeconfig`);
    await writeFile(kubeconfig, serviceAccountKubeconfig(token));
    await using git = await startGitServer();
    const repo = await git.createRepo('rbac');
    const sha = await repo.commit({
      'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git\ndata:\n  greeting: {{values.greeting}}\n',
    });
    await rest.request({
      method: 'POST',
      path: `/api/v1/namespaces/${tenant.name}/configmaps`,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'values' }, data: { 'values.yaml': 'greeting: hello' } },
    });

    // when the operator runs with the flags the chart gives it (except ports and paths, which the test picks)
    const args = container(objects).args.filter((a) =>
      /^--(namespace|leader-elect|leader-election-namespace|leader-election-id|lease-duration|concurrency|log-level|mirror)\b/.test(a),
    );
    await using operator = await startOperator({ kubeconfig, args: [...args, '--webhook-addr=off'] });
    await applyConfigSync(
      configSync(tenant.name, 'app', {
        source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
        valuesFrom: [{ kind: 'ConfigMap', name: 'values' }],
        targets: [{ name: 'here', namespace: tenant.name }],
      }),
    );

    // then it takes the Lease, syncs and records events, all within its namespace's Role
    await waitForReady(tenant.name, 'app', (cs) => cs.status?.sourceRevision === sha, 45_000);
    expect(await configMapData(tenant.name, 'from-git')).toEqual({ greeting: 'hello' });
    const lease = await rest.request<{ spec?: { holderIdentity?: string } }>({
      method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/${tenant.name}/leases/syncline-leader`,
    });
    expect(lease.spec?.holderIdentity).toBeTruthy();
    const events = await rest.request<{ items: { involvedObject: { name: string } }[] }>({ method: 'GET', path: `/api/v1/namespaces/${tenant.name}/events` });
    expect(events.items.some((e) => e.involvedObject.name === 'app')).toBe(true);
    expect(operator.logs.filter((l) => /forbidden/i.test(JSON.stringify(l)))).toEqual([]);
  }, 90_000);

  it("secretAccess=namespaced grants enough and no more: as the chart's ServiceAccount (cluster mode, manage narrowed to ConfigMaps), Secrets are read where granted only", async () => {
    // given the chart's cluster-mode RBAC with Secret rights in one tenant namespace only, applied for real
    await using tenant = await testNamespace({ prefix: 'chart-sec' });
    await using outside = await testNamespace({ prefix: 'chart-nosec' });
    const release = `sec-${tenant.name.slice(-8)}`;
    const rendered = runHelm(
      helm,
      [
        'template',
        release,
        chartDir,
        '--namespace',
        tenant.name,
        '--set',
        'operator.secretAccess=namespaced',
        '--set',
        `operator.secretNamespaces[0]=${tenant.name}`,
        '--set',
        'rbac.manage.rules[0].apiGroups[0]=',
        '--set',
        'rbac.manage.rules[0].resources[0]=configmaps',
        '--set',
        'rbac.manage.rules[0].verbs={get,list,watch,create,update,patch,delete}',
      ],
      helmHome,
    );
    expect(rendered.status, rendered.stderr).toBe(0);
    const objects = (parseYamlDocuments(rendered.stdout) as (Rendered | null)[]).filter((o): o is Rendered => o !== null);
    const rbac = objects.filter((o) => ['ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind ?? ''));
    for (const object of rbac) await serverSideApply(rest, object, tenant.name);
    try {
      const token = (
        await rest.request<{ status: { token: string } }>({
          method: 'POST',
          path: `/api/v1/namespaces/${tenant.name}/serviceaccounts/${release}-syncline/token`,
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
        })
      ).status.token;
      const kubeconfig = join(helmHome, `${tenant.name}.kubeconfig`);
      await writeFile(kubeconfig, serviceAccountKubeconfig(token));
      await using git = await startGitServer();
      const repo = await git.createRepo('secrets');
      const sha = await repo.commit({
        'app/cm.yaml.hbs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-git\ndata:\n  greeting: {{values.greeting}}\n',
      });
      for (const namespace of [tenant.name, outside.name]) {
        await rest.request({
          method: 'POST',
          path: `/api/v1/namespaces/${namespace}/secrets`,
          body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'values' }, stringData: { 'values.yaml': `greeting: hello ${namespace}` } },
        });
      }

      // when the operator runs with the chart's flags (one Secret watch per granted namespace)
      const args = container(objects).args.filter((a) => /^--(secret-namespaces|mirror|concurrency|log-level)\b/.test(a));
      expect(args).toContain(`--secret-namespaces=${tenant.name}`);
      // A cluster-wide operator would take every unlabelled sync of the test files running beside this one (a
      // replica test saw its sync applied by this operator before its own leader was elected): a shard of its
      // own confines it to the two syncs below.
      const shard = release;
      await using operator = await startOperator({ kubeconfig, args: [...args, '--webhook-addr=off', '--shard', shard] });
      for (const namespace of [tenant.name, outside.name]) {
        const sync = configSync(namespace, 'app', {
          source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
          valuesFrom: [{ kind: 'Secret', name: 'values' }],
          targets: [{ name: 'here', namespace }],
        });
        sync.metadata = { ...sync.metadata, labels: { 'syncline.dev/shard': shard } };
        await applyConfigSync(sync);
      }

      // then the sync whose Secret it may read applies, and it is ready (its Secret watch works) ...
      await waitForReady(tenant.name, 'app', (cs) => cs.status?.sourceRevision === sha, 45_000);
      expect(await configMapData(tenant.name, 'from-git')).toEqual({ greeting: `hello ${tenant.name}` });
      expect((await fetch(`http://${operator.probeAddress}/readyz`)).status).toBe(200);
      // ... and the one elsewhere is refused by the API server, and says so
      const refused = await eventually(
        async () => {
          const cs = await readConfigSync(outside.name, 'app');
          const ready = cs?.status?.conditions?.find((c) => c.type === 'Ready');
          return ready?.status === 'False' ? ready : undefined;
        },
        'the outside sync to fail',
        45_000,
      );
      expect(refused.message).toMatch(/forbidden/i);
      expect(await configMapData(outside.name, 'from-git')).toBeUndefined();
    } finally {
      for (const object of rbac.filter((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding')) {
        await rest.request({ method: 'DELETE', path: `/apis/rbac.authorization.k8s.io/v1/${clusterPlural(object.kind ?? '')}/${object.metadata?.name ?? ''}` });
      }
    }
  }, 120_000);

  it.each([
    ['default values', [] as string[], true],
    ['rbac.manage.bindAndEscalate=false', ['--set', 'rbac.manage.bindAndEscalate=false'], false],
  ] as const)(
    "RBAC a platform team syncs, as the chart's ServiceAccount (%s): a ClusterRole beyond the operator's verbs and a RoleBinding to admin",
    async (_name, values, allowed) => {
      // given the chart's cluster-mode RBAC applied for real, and a trusted namespace whose sync holds RBAC
      await using platform = await testNamespace({ prefix: 'chart-grant' });
      const release = `grant-${platform.name.slice(-8)}`;
      const rendered = runHelm(
        helm,
        ['template', release, chartDir, '--namespace', platform.name, '--set', `operator.trustedNamespaces[0]=${platform.name}`, ...values],
        helmHome,
      );
      expect(rendered.status, rendered.stderr).toBe(0);
      const objects = (parseYamlDocuments(rendered.stdout) as (Rendered | null)[]).filter((o): o is Rendered => o !== null);
      const rbac = objects.filter((o) => ['ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind ?? ''));
      for (const object of rbac) await serverSideApply(rest, object, platform.name);
      const granted = `${release}-deployers`;
      try {
        const token = (
          await rest.request<{ status: { token: string } }>({
            method: 'POST',
            path: `/api/v1/namespaces/${platform.name}/serviceaccounts/${release}-syncline/token`,
            body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
          })
        ).status.token;
        const kubeconfig = join(helmHome, `${platform.name}.kubeconfig`);
        await writeFile(kubeconfig, serviceAccountKubeconfig(token));
        await using git = await startGitServer();
        const repo = await git.createRepo('grants');
        const sha = await repo.commit({
          // more than the operator's own verbs: every verb, impersonation
          'app/clusterrole.yaml': `apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: ${granted}\nrules:\n  - apiGroups: ["*"]\n    resources: ["*"]\n    verbs: ["*"]\n  - apiGroups: [""]\n    resources: ["users", "groups", "serviceaccounts"]\n    verbs: ["impersonate"]\n`,
          // the built-in admin role holds deletecollection, impersonate and more
          'app/rolebinding.yaml': `apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: team-admins\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: admin\nsubjects:\n  - apiGroup: rbac.authorization.k8s.io\n    kind: Group\n    name: team-a\n`,
        });

        // when the operator runs with the chart's flags, on a shard of its own (other test files' syncs stay theirs)
        const args = container(objects).args.filter((a) => /^--(trusted-namespaces|operator-namespace|concurrency|log-level|mirror)\b/.test(a));
        expect(args).toContain(`--trusted-namespaces=${platform.name}`);
        const shard = release;
        await using _operator = await startOperator({ kubeconfig, args: [...args, '--webhook-addr=off', '--shard', shard] });
        const sync = configSync(platform.name, 'rbac', {
          source: { git: { repo: repo.url, revision: 'main', path: 'app' } },
          targets: [{ name: 'here', namespace: platform.name }],
        });
        sync.metadata = { ...sync.metadata, labels: { 'syncline.dev/shard': shard } };
        await applyConfigSync(sync);

        if (allowed) {
          // then both are applied
          await waitForReady(platform.name, 'rbac', (cs) => cs.status?.sourceRevision === sha, 60_000);
          await rest.request({ method: 'GET', path: `/apis/rbac.authorization.k8s.io/v1/clusterroles/${granted}` });
          await rest.request({ method: 'GET', path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${platform.name}/rolebindings/team-admins` });
        } else {
          // then the API server refuses both, and the sync says why
          const refused = await eventually(
            async () => {
              const ready = (await readConfigSync(platform.name, 'rbac'))?.status?.conditions?.find((c) => c.type === 'Ready');
              return ready?.status === 'False' ? ready : undefined;
            },
            'the sync to fail',
            60_000,
          );
          expect(refused.message).toMatch(/attempting to grant RBAC permissions not currently held/);
          expect(refused.message).toMatch(new RegExp(`ClusterRole/[^:]*${granted}`));
          expect(refused.message).toMatch(/RoleBinding\/[^:]*team-admins/);
        }
      } finally {
        for (const object of [...rbac, { kind: 'ClusterRole', metadata: { name: granted } }].filter(
          (o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding',
        )) {
          await rest
            .request({ method: 'DELETE', path: `/apis/rbac.authorization.k8s.io/v1/${clusterPlural(object.kind ?? '')}/${object.metadata?.name ?? ''}` })
            .catch(() => undefined);
        }
      }
    },
    150_000,
  );

  it("networkPolicy selects the pods of every shard, and no other release's", () => {
    const objects = template('--set', 'networkPolicy.enabled=true', '--set', 'shards={a,b}');
    const [policy] = find(objects, 'NetworkPolicy');
    const selector = (policy?.['spec'] as { podSelector: LabelSelector }).podSelector;
    const pods = (find(objects, 'Deployment') as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } }[]).map(
      (d) => d.spec.template.metadata.labels,
    );
    expect(pods).toHaveLength(3);
    for (const labels of pods) expect(selects(selector, labels), JSON.stringify(labels)).toBe(true);
    expect(selects(selector, { ...pods[0], 'app.kubernetes.io/instance': 'other' })).toBe(false);
    expect(selects(selector, { ...pods[0], 'app.kubernetes.io/name': 'ingress-nginx' })).toBe(false);
  });

  it('operator.secretAccess=namespaced with rbac.scope=namespace is refused, naming both values', () => {
    const result = runHelm(helm, ['template', 'syncline', chartDir, '--set', 'rbac.scope=namespace', '--set', 'operator.secretAccess=namespaced'], helmHome);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('operator.secretAccess=namespaced needs rbac.scope=cluster');
  });

  it('serviceaccounts/token: every name by default, narrowed to rbac.serviceAccountTokens names and namespaces, or none', () => {
    const tokenRules = (rules: Rule[]): Rule[] => rules.filter((r) => r.resources?.includes('serviceaccounts/token') === true);
    // by default every account in every namespace (tenants choose spec.serviceAccountName)
    expect(tokenRules(rulesOf(template(), 'ClusterRole'))).toEqual([{ apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] }]);
    // names: only those accounts (and the default account)
    const named = template('--set', 'rbac.serviceAccountTokens.names={deployer,ci}', '--set', 'operator.defaultServiceAccount=syncline-apply');
    expect(tokenRules(rulesOf(named, 'ClusterRole'))).toEqual([
      { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'], resourceNames: ['deployer', 'ci', 'syncline-apply'] },
    ]);
    // namespaces: a Role per namespace instead of the cluster-wide rule
    const scoped = template('--set', 'rbac.serviceAccountTokens.namespaces={team-a,team-b}', '--set', 'rbac.serviceAccountTokens.names={deployer}');
    expect(tokenRules(rulesOf(scoped, 'ClusterRole'))).toEqual([]);
    const roles = find(scoped, 'Role', 'syncline-tokens');
    expect(roles.map((r) => r.metadata?.namespace)).toEqual(['team-a', 'team-b']);
    for (const role of roles)
      expect(role['rules']).toEqual([{ apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'], resourceNames: ['deployer'] }]);
    expect(find(scoped, 'RoleBinding', 'syncline-tokens').map((r) => r.metadata?.namespace)).toEqual(['team-a', 'team-b']);
    // off: nowhere, in either scope
    for (const scope of ['cluster', 'namespace']) {
      const off = template('--set', 'rbac.serviceAccountTokens.enabled=false', '--set', `rbac.scope=${scope}`);
      expect(tokenRules([...rulesOf(off, 'ClusterRole'), ...rulesOf(off, 'Role')]), scope).toEqual([]);
    }
    expect(tokenRules(rulesOf(template('--set', 'rbac.scope=namespace'), 'Role'))).toHaveLength(1);
  });

  it('aggregated ClusterRoles: view (every Syncline kind, read) joins view by default; edit joins edit/admin only when asked', () => {
    const kinds = [
      'configsyncs',
      'manifestsyncs',
      'remoteclusters',
      'namespacereplications',
      'namespacereplicationpolicies',
      'notificationproviders',
      'notificationalerts',
    ];
    const objects = template();
    const [view] = find(objects, 'ClusterRole', 'syncline-view');
    const [edit] = find(objects, 'ClusterRole', 'syncline-edit');
    expect(view?.metadata?.labels?.['rbac.authorization.k8s.io/aggregate-to-view']).toBe('true');
    expect(edit?.metadata?.labels?.['rbac.authorization.k8s.io/aggregate-to-edit']).toBeUndefined();
    expect((view?.['rules'] as Rule[])[0]).toMatchObject({
      apiGroups: ['syncline.dev'],
      resources: expect.arrayContaining(kinds) as unknown,
      verbs: ['get', 'list', 'watch'],
    });
    expect((edit?.['rules'] as Rule[])[0]).toMatchObject({
      resources: kinds,
      verbs: expect.arrayContaining(['create', 'update', 'patch', 'delete']) as unknown,
    });
    const [aggregatedEdit] = find(template('--set', 'rbac.aggregation.edit=true', '--set', 'rbac.aggregation.view=false'), 'ClusterRole', 'syncline-edit');
    expect(aggregatedEdit?.metadata?.labels).toMatchObject({
      'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
      'rbac.authorization.k8s.io/aggregate-to-admin': 'true',
    });
    // namespace mode stays free of cluster-scoped objects
    expect(find(template('--set', 'rbac.scope=namespace'), 'ClusterRole')).toEqual([]);
  });

  it('renders the image digest, startupProbe, grace period, revision history and extra volumes', () => {
    const objects = template(...everything(ns.name));
    const [deployment] = find(objects, 'Deployment') as unknown as (DeploymentShape & {
      spec: { revisionHistoryLimit: number; template: { spec: { terminationGracePeriodSeconds: number; tolerations: unknown[] } } };
    })[];
    const c = container(objects) as Container & { image: string; startupProbe: { httpGet: { path: string } } };
    expect(c.image).toBe(`ghcr.io/syncline/syncline@${DIGEST}`);
    expect(c.startupProbe.httpGet.path).toBe('/healthz');
    expect(c.volumeMounts).toContainEqual({ name: 'git-ca', mountPath: '/etc/syncline/git-ca', readOnly: true });
    expect(deployment?.spec.template.spec.volumes).toContainEqual({ name: 'git-ca', configMap: { name: 'corp-ca' } });
    expect(deployment?.spec.revisionHistoryLimit).toBe(5);
    expect(deployment?.spec.template.spec.terminationGracePeriodSeconds).toBe(45);
    expect(deployment?.spec.template.spec.tolerations).toEqual([{ key: 'dedicated', operator: 'Equal', value: 'platform', effect: 'NoSchedule' }]);
    // a spread constraint without a selector counts the Deployment's own pods
    expect((deployment?.spec.template.spec as unknown as { topologySpreadConstraints: unknown[] }).topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'topology.kubernetes.io/zone',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'syncline', 'app.kubernetes.io/instance': 'syncline' } },
      },
    ]);
    // the defaults: the tag, a startup probe, 30 s, 3
    const defaults = template();
    expect((container(defaults) as Container & { image: string }).image).toBe('ghcr.io/syncline/syncline:0.1.0');
    expect((find(defaults, 'Deployment')[0]?.['spec'] as { revisionHistoryLimit: number }).revisionHistoryLimit).toBe(3);
    expect(container(template('--set', 'startupProbe=null'))).not.toHaveProperty('startupProbe');
  });

  it('values.schema.json validates the free-form values (resources, tolerations, volumes, probes, affinity, env, RBAC rules, NetworkPolicy peers)', () => {
    for (const [args, error] of [
      [['--set', 'resources.requests.cpu=lots'], "at '/resources/requests/cpu'"],
      [['--set', 'resources.limit.memory=1Gi'], "additional properties 'limit' not allowed"],
      [['--set', 'tolerations[0].operator=Maybe'], "at '/tolerations/0/operator'"],
      [['--set', 'tolerations[0].effekt=NoSchedule'], "additional properties 'effekt' not allowed"],
      [['--set', 'extraVolumeMounts[0].name=ca'], "at '/extraVolumeMounts/0'"],
      [['--set', 'extraVolumes[0].name=ca'], "at '/extraVolumes/0'"],
      [['--set', 'livenessProbe.httpGet.port=probes', '--set', 'livenessProbe.periodSecond=5'], "additional properties 'periodSecond' not allowed"],
      [['--set', 'affinity.podAntiAfinity.x=1'], "additional properties 'podAntiAfinity' not allowed"],
      [['--set', 'topologySpreadConstraints[0].maxSkew=1'], "at '/topologySpreadConstraints/0'"],
      [['--set', 'operator.extraEnv[0].value=x'], "at '/operator/extraEnv/0'"],
      [['--set', 'securityContext.readOnlyRootFilesystem=yes'], "at '/securityContext/readOnlyRootFilesystem'"],
      [['--set', 'image.digest=latest'], "at '/image/digest'"],
      [['--set', 'metrics.prometheusRule.notReadyFor=ten minutes'], "at '/metrics/prometheusRule/notReadyFor'"],
      [['--set', 'rbac.manage.rules[0].resources[0]=configmaps', '--set', 'rbac.manage.rules[0].verb[0]=get'], "additional properties 'verb' not allowed"],
      [['--set', 'networkPolicy.metrics.from[0].podselector.matchLabels.app=prometheus'], "additional properties 'podselector' not allowed"],
      [['--set', 'networkPolicy.egress.extra[0].ports[0].protocol=HTTP'], "at '/networkPolicy/egress/extra/0/ports/0/protocol'"],
    ] as const) {
      const result = runHelm(helm, ['template', 'syncline', chartDir, ...args], helmHome);
      expect(result.status, args.join(' ')).not.toBe(0);
      expect(result.stderr, args.join(' ')).toContain(error);
    }
  });

  it('PrometheusRule and Grafana dashboard: optional, and every series they read is one the operator exports', async () => {
    expect(find(template(), 'PrometheusRule')).toEqual([]);
    expect(find(template(), 'ConfigMap')).toEqual([]);
    const objects = template(...everything(ns.name));
    const [rule] = find(objects, 'PrometheusRule');
    expect(rule?.metadata?.labels?.['release']).toBe('kube-prometheus-stack');
    const rules = (rule?.['spec'] as { groups: { rules: { alert: string; expr: string; for?: string; labels: Record<string, string> }[] }[] }).groups.flatMap(
      (g) => g.rules,
    );
    expect([...new Set(rules.map((r) => r.alert))]).toEqual([
      'SynclineResourceNotReady',
      'SynclineReconcileStalled',
      'SynclineDRLagging',
      'SynclineMirrorConflicts',
      'SynclineNotificationsFailing',
      'SynclineOperatorDown',
      'SynclineNoLeader',
    ]);
    expect(rules.find((r) => r.alert === 'SynclineResourceNotReady')?.for).toBe('10m');
    // one "down" alert per shard's metrics Service (the ServiceMonitor's job label)
    expect(rules.filter((r) => r.alert === 'SynclineOperatorDown').map((r) => /job="([^"]+)"/.exec(r.expr)?.[1])).toEqual([
      'syncline-metrics',
      'syncline-shard-a-metrics',
      'syncline-shard-b-metrics',
    ]);
    for (const r of rules) expect(r.labels, r.alert).toEqual({ severity: 'warning' });

    const [dashboard] = find(objects, 'ConfigMap', 'syncline-dashboard');
    expect(dashboard?.metadata?.labels?.['grafana_dashboard']).toBe('1');
    expect(dashboard?.metadata?.annotations).toEqual({ grafana_folder: 'Syncline' });
    const json = JSON.parse((dashboard?.['data'] as Record<string, string>)['syncline.json'] ?? '') as {
      uid: string;
      panels: { targets: { expr: string }[] }[];
    };
    expect(json.uid).toBe('syncline');
    const exprs = [...rules.map((r) => r.expr), ...json.panels.flatMap((p) => p.targets.map((t) => t.expr))];

    const exported = await exportedMetricNames();
    const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\b(syncline_[a-z_]+)/g)].map((m) => (m[1] ?? '').replace(/_(bucket|sum|count)$/, ''))));
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
  });

  it('installs for real with helm on the control plane, which reports its real version (kubeVersion is checked)', async () => {
    // given a control plane that says which Kubernetes it is (kubectl version, Helm's kubeVersion check)
    const version = await rest.request<{ gitVersion: string; major: string; minor: string }>({ method: 'GET', path: '/version' });
    expect(version.gitVersion).toMatch(/^v1\.\d+\.\d+$/);
    expect(Number(version.minor)).toBeGreaterThanOrEqual(28);
    await using target = await testNamespace({ prefix: 'chart-install' });
    const release = `it-${target.name.slice(-8)}`;
    const kubeconfig = ['--kubeconfig', testKubeconfigPath(), '--namespace', target.name];

    // when helm installs it (first as a server-side dry run, then for real; no kubelet, so pods never start)
    const dry = runHelm(helm, ['install', release, chartDir, ...kubeconfig, '--dry-run=server'], helmHome);
    expect(dry.stderr).toBe('');
    expect(dry.status).toBe(0);
    const install = runHelm(helm, ['install', release, chartDir, ...kubeconfig], helmHome);
    try {
      expect(install.stderr).toBe('');
      expect(install.status).toBe(0);
      expect(install.stdout).toContain('STATUS: deployed');

      // then its objects exist: the Deployment, Services, ServiceAccount, RBAC and the CRDs
      const fullname = `${release}-syncline`;
      const get = (path: string): Promise<{ metadata: { name: string; labels?: Record<string, string> } }> => rest.request({ method: 'GET', path });
      const deployment = await get(`/apis/apps/v1/namespaces/${target.name}/deployments/${fullname}`);
      expect(deployment.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
      await get(`/api/v1/namespaces/${target.name}/services/${fullname}-webhooks`);
      await get(`/api/v1/namespaces/${target.name}/serviceaccounts/${fullname}`);
      await get(`/apis/rbac.authorization.k8s.io/v1/clusterroles/${fullname}`);
      await get(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${fullname}-manage`);
      await get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${target.name}/roles/${fullname}-leader-election`);
      for (const crd of ['configsyncs', 'manifestsyncs', 'remoteclusters', 'namespacereplications', 'namespacereplicationpolicies'])
        await get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}.syncline.dev`);
    } finally {
      // and it uninstalls cleanly (the cluster-scoped RBAC goes with it)
      const uninstall = runHelm(helm, ['uninstall', release, ...kubeconfig, '--wait', '--timeout', '60s'], helmHome);
      expect(uninstall.status, uninstall.stderr).toBe(0);
    }
    await expect(rest.request({ method: 'GET', path: `/apis/rbac.authorization.k8s.io/v1/clusterroles/${release}-syncline` })).rejects.toThrow(
      /404|not found/i,
    );
  }, 120_000);

  it('installs with every optional value on, and the aggregated roles let namespace users read (view, edit) and write (edit, when asked) Syncline objects', async () => {
    // given helm install with every option on (PrometheusRule and ServiceMonitor stand-in CRDs installed above)
    await using target = await testNamespace({ prefix: 'chart-all' });
    const release = `all-${target.name.slice(-8)}`;
    const fullname = `${release}-syncline`;
    const kubeconfig = ['--kubeconfig', testKubeconfigPath(), '--namespace', target.name];
    const install = runHelm(helm, ['install', release, chartDir, ...kubeconfig, ...everything(target.name)], helmHome);
    try {
      expect(install.stderr).toBe('');
      expect(install.status).toBe(0);
      await rest.request({ method: 'GET', path: `/apis/monitoring.coreos.com/v1/namespaces/${target.name}/prometheusrules/${fullname}` });
      await rest.request({ method: 'GET', path: `/api/v1/namespaces/${target.name}/configmaps/${fullname}-dashboard` });

      // and two people of the namespace: alice with the built-in `edit`, bob with `view`
      for (const [user, role] of [
        ['alice', 'edit'],
        ['bob', 'view'],
      ] as const) {
        await rest.request({
          method: 'POST',
          path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${target.name}/rolebindings`,
          body: {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'RoleBinding',
            metadata: { name: `${user}-${role}` },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
            subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
          },
        });
      }
      const canI = (user: string, verb: string, resource: string, namespace = target.name): string => {
        const result = spawnSync(
          'kubectl',
          [
            'auth',
            'can-i',
            verb,
            `${resource}.syncline.dev`,
            '--as',
            user,
            '--namespace',
            namespace,
            '--kubeconfig',
            testKubeconfigPath(),
            '--cache-dir',
            join(helmHome, 'kube-cache'),
          ],
          { encoding: 'utf8' },
        );
        return result.stdout.trim();
      };
      const answers = (user: string, verbs: readonly string[], resources: readonly string[]): string =>
        verbs.flatMap((verb) => resources.map((r) => `${verb} ${r}: ${canI(user, verb, r)}`)).join('\n');
      const kinds = ['configsyncs', 'manifestsyncs', 'namespacereplicationpolicies', 'namespacereplications', 'remoteclusters'];
      const expected = (verbs: readonly string[], answer: string): string => verbs.flatMap((verb) => kinds.map((r) => `${verb} ${r}: ${answer}`)).join('\n');

      // then (once the controller manager has aggregated the roles) both read every kind, alice writes them too
      await eventually(
        () =>
          Promise.resolve(
            answers('alice', ['get', 'list', 'watch', 'create', 'patch', 'delete'], kinds) ===
              expected(['get', 'list', 'watch', 'create', 'patch', 'delete'], 'yes')
              ? true
              : undefined,
          ),
        'edit to aggregate the Syncline roles',
        60_000,
      );
      await eventually(
        () => Promise.resolve(answers('bob', ['get', 'list', 'watch'], kinds) === expected(['get', 'list', 'watch'], 'yes') ? true : undefined),
        'view to aggregate the Syncline roles',
        60_000,
      );
      expect(answers('bob', ['create', 'delete'], kinds)).toBe(expected(['create', 'delete'], 'no'));
      // only in their namespace
      expect(canI('alice', 'get', 'configsyncs', 'default')).toBe('no');

      // when edit aggregation is turned off again (the default), alice still reads but no longer writes
      const upgrade = runHelm(
        helm,
        ['upgrade', release, chartDir, ...kubeconfig, ...everything(target.name), '--set', 'rbac.aggregation.edit=false'],
        helmHome,
      );
      expect(upgrade.status, upgrade.stderr).toBe(0);
      await eventually(() => Promise.resolve(canI('alice', 'create', 'configsyncs') === 'no' ? true : undefined), 'edit to drop the write rights', 60_000);
      expect(answers('alice', ['get', 'list', 'watch'], kinds)).toBe(expected(['get', 'list', 'watch'], 'yes'));
    } finally {
      const uninstall = runHelm(helm, ['uninstall', release, ...kubeconfig, '--wait', '--timeout', '60s'], helmHome);
      expect(uninstall.status, uninstall.stderr).toBe(0);
    }
  }, 240_000);

  for (const [name, args] of [
    ['default values (cluster mode)', (): string[] => []],
    ['namespace mode', (): string[] => ['--set', 'rbac.scope=namespace']],
    ['every option on', (): string[] => everything(ns.name)],
    ['every option on, namespace mode', (): string[] => everythingIn('namespace', ns.name)],
  ] as const) {
    it(`the control plane accepts everything it renders: ${name}`, async () => {
      const objects = template(...args());
      expect(objects.length).toBeGreaterThan(5);
      const rejected: string[] = [];
      for (const object of objects) {
        const error = await dryRunApply(rest, object, ns.name);
        if (error !== undefined) rejected.push(`${object.kind}/${object.metadata?.name}: ${error}`);
      }
      expect(rejected).toEqual([]);
    });
  }
});

type LabelSelector = { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] };

/** Whether a LabelSelector selects an object with these labels (Kubernetes' rules, In/NotIn/Exists/DoesNotExist). */
function selects(selector: LabelSelector, labels: Record<string, string | undefined>): boolean {
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
  const byExpressions = (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    const value = labels[key];
    if (operator === 'In') return value !== undefined && values.includes(value);
    if (operator === 'NotIn') return value === undefined || !values.includes(value);
    if (operator === 'Exists') return value !== undefined;
    return value === undefined;
  });
  return byLabels && byExpressions;
}

/**
 * The metric names the operator registers (`name: 'syncline_…'` or a constant in its sources), plus the per-object
 * readiness series the alerts and dashboard read: syncline_resource_info{kind,namespace,name,ready,suspended}.
 */
async function exportedMetricNames(): Promise<Set<string>> {
  const names = new Set(['syncline_resource_info']);
  // The operator's own metrics, and those of the parts the syncline binary plugs into it (notifications).
  for (const dir of ['operator', 'notify'].map((pkg) => join(root, 'packages', pkg, 'src'))) {
    for (const file of await readdir(dir, { recursive: true })) {
      if (!file.endsWith('.ts') || file.endsWith('.test.ts')) continue;
      // A name given inline, or through a constant (export const NOTIFICATIONS_METRIC = 'syncline_…').
      for (const match of (await readFile(join(dir, file), 'utf8')).matchAll(/(?:name: |const [A-Z_]+ = )'(syncline_[a-z_]+)'/g)) names.add(match[1] ?? '');
    }
  }
  return names;
}

function clusterPlural(kind: string): string {
  return kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings';
}

/** A kubeconfig for the test cluster that authenticates with a ServiceAccount token. */
function serviceAccountKubeconfig(token: string): string {
  const admin = new KubeConfig();
  admin.loadFromFile(testKubeconfigPath());
  const cluster = admin.getCurrentCluster();
  if (cluster === null) throw new Error('the test kubeconfig has no current cluster');
  const sa = new KubeConfig();
  sa.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'syncline', token }],
    contexts: [{ name: 'syncline', cluster: cluster.name, user: 'syncline' }],
    currentContext: 'syncline',
  });
  return sa.exportConfig();
}

async function serverSideApply(rest: KubeRest, object: Rendered, namespace: string): Promise<void> {
  const error = await applyObject(rest, object, namespace, false);
  if (error !== undefined) throw new Error(`${object.kind}/${object.metadata?.name}: ${error}`);
}

async function dryRunApply(rest: KubeRest, object: Rendered, defaultNamespace: string): Promise<string | undefined> {
  return applyObject(rest, object, defaultNamespace, true);
}

/** Server-side apply; with dryRun=All validation, defaulting and admission run and nothing is stored. */
async function applyObject(rest: KubeRest, object: Rendered, defaultNamespace: string, dryRun: boolean): Promise<string | undefined> {
  const apiVersion = object.apiVersion ?? '';
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const base = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
  const list = await rest.request<{ resources: { name: string; kind: string; namespaced: boolean }[] }>({ method: 'GET', path: base });
  const resource = list.resources.find((r) => r.kind === object.kind && !r.name.includes('/'));
  if (resource === undefined) return `the API server does not serve ${apiVersion} ${object.kind}`;
  const namespace = object.metadata?.namespace ?? defaultNamespace;
  const path = `${base}${resource.namespaced ? `/namespaces/${namespace}` : ''}/${resource.name}/${object.metadata?.name ?? ''}`;
  try {
    await rest.request({
      method: 'PATCH',
      path,
      query: { ...(dryRun ? { dryRun: 'All' } : {}), fieldManager: 'helm', force: true, fieldValidation: 'Strict' },
      contentType: 'application/apply-patch+yaml',
      body: object,
    });
    return undefined;
  } catch (error) {
    if (error instanceof KubeApiError) return error.message;
    throw error;
  }
}

/**
 * The test control plane has no Prometheus Operator and no Gateway API: a stand-in CRD for a ServiceMonitor,
 * PrometheusRule or HTTPRoute (same group, version and kind, open schema) lets the dry run and `helm install`
 * check the rest of the object. Left installed: other runs share it.
 */
async function installMonitoringStandIn(rest: KubeRest, crd: { kind: string; plural: string; group?: string }): Promise<void> {
  const singular = crd.kind.toLowerCase();
  const group = crd.group ?? 'monitoring.coreos.com';
  await rest.request({
    method: 'PATCH',
    path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.plural}.${group}`,
    query: { fieldManager: 'syncline-chart-test', force: true },
    contentType: 'application/apply-patch+yaml',
    body: {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      // A group under k8s.io must say where its API was approved (the Gateway API's own CRDs carry this).
      metadata: {
        name: `${crd.plural}.${group}`,
        ...(group.endsWith('.k8s.io') ? { annotations: { 'api-approved.kubernetes.io': 'https://github.com/kubernetes-sigs/gateway-api/pull/1538' } } : {}),
      },
      spec: {
        group,
        scope: 'Namespaced',
        names: { kind: crd.kind, listKind: `${crd.kind}List`, plural: crd.plural, singular },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    },
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await rest.request({ method: 'GET', path: `/apis/${group}/v1/${crd.plural}` });
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }
}

/** Plain objects, keys as written (client-node's loadAllYaml renames keys such as `default` to fit its models). */
function parseYamlDocuments(text: string): unknown[] {
  return parseAllDocuments(text).map((document) => {
    if (document.errors.length > 0) throw new Error(document.errors.map((e) => e.message).join('; '));
    return document.toJS() as unknown;
  });
}
