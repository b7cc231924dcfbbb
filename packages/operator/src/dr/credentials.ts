// Disaster recovery never copies the credentials the operator itself uses, pure. A RemoteCluster's kubeconfig
// often lives in the very namespace being replicated (the standby's own RemoteCluster among them): copied, it
// would hand whoever may read Secrets in the standby namespace the identity the operator writes there with,
// often the standby's admin. The same holds for Git credentials, chart registry and repository credentials, SOPS decryption keys
// and the webhook secret. Which Secrets those are
// comes from the objects that reference them (the operator's informer caches), never from the Secret's content
// or labels.
//
// What is not a credential here: a ConfigSync's valuesFrom Secret holds the application's values (data the
// standby's workloads need at failover, like any other Secret of the namespace), and a ManifestSync's source
// Secret is the data it copies. Both are replicated.
import type { KubeObject } from '@syncline/apply';

/** The fields of the objects that reference credentials, as the informers hold them. */
export type CredentialHolders = {
  readonly remoteClusters: ReadonlyArray<{
    readonly metadata: { readonly namespace?: string | undefined };
    readonly spec?: {
      readonly kubeconfigSecretRef?: { readonly name: string } | undefined;
      readonly caSecretRef?: { readonly name: string } | undefined;
      readonly tokenSecretRef?: { readonly name: string } | undefined;
    };
  }>;
  readonly configSyncs: ReadonlyArray<{
    readonly metadata: { readonly namespace?: string | undefined };
    readonly spec?: {
      readonly source?: {
        readonly git?: { readonly secretRef?: { readonly name: string } | undefined };
        readonly helm?: { readonly repository?: { readonly secretRef?: { readonly name: string } | undefined } | undefined } | undefined;
      };
      readonly decryption?: { readonly secretRef?: { readonly name: string } | undefined } | undefined;
    };
  }>;
  /** The webhook receiver's Secret (--webhook-secret), when one is configured. */
  readonly webhookSecret?: { readonly namespace: string; readonly name: string } | undefined;
};

/** Secret name → what uses it, for every Secret in `namespace` the operator uses as a credential. */
export function credentialSecretsIn(namespace: string, holders: CredentialHolders): Map<string, string> {
  const found = new Map<string, string>();
  const add = (name: string | undefined, why: string): void => {
    if (name !== undefined && !found.has(name)) found.set(name, why);
  };
  for (const rc of holders.remoteClusters) {
    if ((rc.metadata.namespace ?? 'default') !== namespace) continue;
    add(rc.spec?.kubeconfigSecretRef?.name, "a RemoteCluster's kubeconfig");
    add(rc.spec?.tokenSecretRef?.name, "a RemoteCluster's token");
    add(rc.spec?.caSecretRef?.name, "a RemoteCluster's CA");
  }
  for (const cs of holders.configSyncs) {
    if ((cs.metadata.namespace ?? 'default') !== namespace) continue;
    add(cs.spec?.source?.git?.secretRef?.name, "a ConfigSync's Git credentials");
    add(cs.spec?.decryption?.secretRef?.name, "a ConfigSync's SOPS decryption keys");
    add(cs.spec?.source?.helm?.repository?.secretRef?.name, "a ConfigSync's chart registry or repository credentials");
  }
  if (holders.webhookSecret?.namespace === namespace) add(holders.webhookSecret.name, "the webhook receiver's secret");
  return found;
}

export type CredentialPartition = {
  readonly replicate: KubeObject[];
  /** Each credential left out: its name and what uses it (never a value). */
  readonly excluded: { readonly name: string; readonly why: string }[];
};

/** Splits the source namespace's objects into what is replicated and the operator's credentials, which never are. */
export function withoutCredentials(objects: readonly KubeObject[], credentials: ReadonlyMap<string, string>): CredentialPartition {
  const replicate: KubeObject[] = [];
  const excluded: { name: string; why: string }[] = [];
  for (const object of objects) {
    const why = object.apiVersion === 'v1' && object.kind === 'Secret' ? credentials.get(object.metadata.name) : undefined;
    if (why === undefined) replicate.push(object);
    else excluded.push({ name: object.metadata.name, why });
  }
  return { replicate, excluded };
}
