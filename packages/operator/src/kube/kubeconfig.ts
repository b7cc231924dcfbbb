// Which cluster the CLI and the operator talk to, chosen the way kubectl chooses it: --kubeconfig FILE, else
// every file in $KUBECONFIG (a:b, merged), else ~/.kube/config, else in-cluster (a pod's ServiceAccount);
// then --context.
import { KubeConfig } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export type KubeConfigOptions = {
  /** --kubeconfig: this file only (KUBECONFIG is ignored), as in kubectl. */
  readonly kubeconfig?: string | undefined;
  /** --context: the context to use instead of the current-context. */
  readonly context?: string | undefined;
  readonly env: NodeJS.ProcessEnv;
};

export function loadKubeConfig(options: KubeConfigOptions): KubeConfig {
  let kc: KubeConfig;
  const list = options.env['KUBECONFIG'];
  if (options.kubeconfig !== undefined && options.kubeconfig !== '') {
    kc = new KubeConfig();
    kc.loadFromFile(options.kubeconfig);
  } else if (list !== undefined && list !== '') {
    kc = mergeKubeConfigFiles(list.split(delimiter));
  } else {
    kc = new KubeConfig();
    const home = join(options.env['HOME'] ?? homedir(), '.kube', 'config');
    if (existsSync(home)) kc.loadFromFile(home);
    else if (options.env['KUBERNETES_SERVICE_HOST'] !== undefined && existsSync(SERVICE_ACCOUNT_TOKEN)) kc.loadFromCluster();
    else throw new Error('no kubeconfig: set KUBECONFIG, pass --kubeconfig FILE, or create ~/.kube/config (in a pod, the ServiceAccount is used)');
  }
  if (options.context !== undefined && options.context !== '') {
    if (kc.getContextObject(options.context) === null) throw new Error(`context "${options.context}" does not exist`);
    kc.setCurrentContext(options.context);
  }
  return kc;
}

/**
 * kubectl's merge of the files in $KUBECONFIG: files that do not exist are skipped (an empty entry too); for
 * a cluster, user or context name the first file that defines it wins; current-context comes from the first
 * file that sets one. Relative paths (certificate files) resolve against the file they are written in.
 */
export function mergeKubeConfigFiles(files: readonly string[]): KubeConfig {
  const present = files.filter((file) => file !== '' && existsSync(file));
  if (present.length === 0) throw new Error(`none of the files in KUBECONFIG exist: ${files.join(delimiter)}`);
  const loaded = present.map((file) => {
    const kc = new KubeConfig();
    kc.loadFromFile(file);
    return kc;
  });
  return mergeKubeConfigs(loaded);
}

export function mergeKubeConfigs(configs: readonly KubeConfig[]): KubeConfig {
  const firstByName = <T extends { name: string }>(lists: readonly (readonly T[])[]): T[] => {
    const seen = new Map<string, T>();
    for (const list of lists) for (const item of list) if (!seen.has(item.name)) seen.set(item.name, item);
    return [...seen.values()];
  };
  const merged = new KubeConfig();
  merged.loadFromOptions({
    clusters: firstByName(configs.map((c) => c.clusters)),
    users: firstByName(configs.map((c) => c.users)),
    contexts: firstByName(configs.map((c) => c.contexts)),
    currentContext: configs.map((c) => c.currentContext).find((name) => name !== undefined && name !== '') ?? '',
  });
  return merged;
}
