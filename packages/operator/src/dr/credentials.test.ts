import type { KubeObject } from '@syncline/apply';
import { describe, expect, it } from 'vitest';
import { credentialSecretsIn, withoutCredentials, type CredentialHolders } from './credentials.ts';

const secret = (name: string, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'shop' },
  data: { k: 'dmFsdWU=' },
  ...extra,
});
const configMap = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'shop' }, data: {} });

const holders: CredentialHolders = {
  remoteClusters: [
    { metadata: { namespace: 'shop' }, spec: { kubeconfigSecretRef: { name: 'dr-kubeconfig' } } },
    { metadata: { namespace: 'shop' }, spec: { tokenSecretRef: { name: 'east-token' }, caSecretRef: { name: 'east-ca' } } },
    { metadata: { namespace: 'other' }, spec: { kubeconfigSecretRef: { name: 'db-password' } } },
  ],
  configSyncs: [
    { metadata: { namespace: 'shop' }, spec: { source: { git: { secretRef: { name: 'git-auth' } } } } },
    { metadata: { namespace: 'shop' }, spec: { source: { git: {} }, decryption: { secretRef: { name: 'sops-keys' } } } },
    { metadata: { namespace: 'shop' }, spec: { source: { git: {}, helm: { repository: { secretRef: { name: 'regcred' } } } } } },
    { metadata: { namespace: 'other' }, spec: { source: { git: { secretRef: { name: 'app-values' } } } } },
  ],
  webhookSecret: { namespace: 'shop', name: 'webhook' },
};

describe('credentialSecretsIn', () => {
  it("names every Secret of the namespace the operator uses: RemoteCluster kubeconfig, token and CA, Git, SOPS and chart credentials, the webhook's", () => {
    expect(Object.fromEntries(credentialSecretsIn('shop', holders))).toEqual({
      'dr-kubeconfig': "a RemoteCluster's kubeconfig",
      'east-token': "a RemoteCluster's token",
      'east-ca': "a RemoteCluster's CA",
      'git-auth': "a ConfigSync's Git credentials",
      'sops-keys': "a ConfigSync's SOPS decryption keys",
      regcred: "a ConfigSync's chart registry or repository credentials",
      webhook: "the webhook receiver's secret",
    });
  });

  it('ignores references from other namespaces (a reference names a Secret of its own namespace only)', () => {
    expect([...credentialSecretsIn('other', holders).keys()].sort()).toEqual(['app-values', 'db-password']);
    expect(credentialSecretsIn('empty', holders).size).toBe(0);
  });
});

describe('withoutCredentials', () => {
  it('leaves out exactly the credential Secrets, by name and never by value; everything else is replicated', () => {
    const objects = [
      secret('dr-kubeconfig'),
      secret('db-password'),
      secret('app-values'),
      configMap('dr-kubeconfig'),
      secret('git-auth'),
      configMap('settings'),
    ];
    const { replicate, excluded } = withoutCredentials(objects, credentialSecretsIn('shop', holders));
    expect(replicate.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'Secret/db-password',
      'Secret/app-values',
      'ConfigMap/dr-kubeconfig',
      'ConfigMap/settings',
    ]);
    expect(excluded).toEqual([
      { name: 'dr-kubeconfig', why: "a RemoteCluster's kubeconfig" },
      { name: 'git-auth', why: "a ConfigSync's Git credentials" },
    ]);
    expect(JSON.stringify(excluded)).not.toContain('dmFsdWU=');
  });

  it('a Secret that is only labelled or named like a credential is replicated (references decide, not marks)', () => {
    const { replicate } = withoutCredentials(
      [secret('kubeconfig', { metadata: { name: 'kubeconfig', namespace: 'shop', labels: { 'syncline.dev/credential': 'true' } } })],
      credentialSecretsIn('shop', holders),
    );
    expect(replicate).toHaveLength(1);
  });
});
