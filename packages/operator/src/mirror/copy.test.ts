import type { KubeObject } from '@syncline/apply';
import { describe, expect, it } from 'vitest';
import { copyRulesFor, makeCopy, makeReplica, replicaExtraKeys, replicaReplacementReason, sanitizeCopy } from './copy.ts';
import { MirrorError, MirrorErrorReason } from './errors.ts';
import { mirrorKeys, sourceRefHash } from './labels.ts';
import { parseMirrorSpec } from './spec.ts';
import { configMap, keys, replicaOf, secret } from './test-support.ts';

const liveMetadata = {
  uid: 'u-1',
  resourceVersion: '42',
  generation: 3,
  creationTimestamp: '2026-01-01T00:00:00Z',
  managedFields: [{ manager: 'kubectl' }],
  selfLink: '/api/v1/x',
  ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'p-1' }],
  finalizers: ['example.com/cleanup'],
  deletionTimestamp: '2026-01-02T00:00:00Z',
  deletionGracePeriodSeconds: 30,
  generateName: 'db-',
};

const hash = sourceRefHash({ namespace: 'dev', name: 'db' });

describe('sanitizeCopy', () => {
  it('drops what the API server owns, owners, finalizers and deletion state, keeps the rest', () => {
    // given a live Secret with server-set metadata, a status and an ordinary label and annotation
    const live = secret({
      metadata: liveMetadata,
      labels: { app: 'web' },
      annotations: { note: 'keep' },
      data: { a: 'YQ==' },
      type: 'Opaque',
      extra: { status: { x: 1 }, immutable: true },
    });
    // when it is sanitized
    const copy = sanitizeCopy(live, { keys });
    // then only what a fresh create accepts is left; type and immutable are kept
    expect(copy).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db', namespace: 'dev', labels: { app: 'web' }, annotations: { note: 'keep' } },
      type: 'Opaque',
      data: { a: 'YQ==' },
      immutable: true,
    });
  });

  it('does not modify its input', () => {
    const live = secret({ metadata: liveMetadata, data: { a: 'YQ==' } });
    const before = structuredClone(live);
    sanitizeCopy(live, { keys });
    expect(live).toEqual(before);
  });

  it("strips kubectl's last-applied annotation and Syncline's ownership marks", () => {
    const live = secret({
      labels: { 'syncline.dev/owner': 'abc', app: 'web' },
      annotations: {
        'kubectl.kubernetes.io/last-applied-configuration': '{}',
        'syncline.dev/owned-by': 'ns/cs/t',
        'syncline.dev/applied-digest': 'd',
        'syncline.dev/prune': 'disabled',
      },
    });
    expect(sanitizeCopy(live, { keys }).metadata).toEqual({ name: 'db', namespace: 'dev', labels: { app: 'web' } });
  });

  it('strips every mirroring key, so a copy of a source never becomes a source itself', () => {
    const mv = mirrorKeys('mirrorverse.dev');
    const live = secret({
      labels: {
        'mirrorverse.dev/sync-source': 'true',
        'mirrorverse.dev/targets': 'a-b',
        'mirrorverse.dev/strategy': 'patch',
        'mirrorverse.dev/sync-replica': 'true',
        'mirrorverse.dev/stale': 'true',
        'mirrorverse.dev/source-hash': 'h',
        app: 'web',
      },
      annotations: { 'mirrorverse.dev/targets': '*', 'mirrorverse.dev/exclude': 'x', 'mirrorverse.dev/source': 'a/b', 'mirrorverse.dev/stale-since': 't' },
    });
    expect(sanitizeCopy(live, { keys: mv }).metadata).toEqual({ name: 'db', namespace: 'dev', labels: { app: 'web' } });
  });

  it('refuses a service-account token Secret', () => {
    const token = secret({ type: 'kubernetes.io/service-account-token', data: { token: 'dA==' } });
    expect(() => sanitizeCopy(token, { keys })).toThrow(/^Secret dev\/db: a kubernetes\.io\/service-account-token Secret is never copied/);
    expect(() => sanitizeCopy(token, { keys })).toThrow(expect.objectContaining({ reason: MirrorErrorReason.NotCopyable }) as Error);
  });

  it.each([['identity.agekey'], ['team.asc'], ['sops.vault-token'], ['sops.aws-kms']])(
    'refuses a Secret holding SOPS keys (%s), judged by key names only',
    (key) => {
      const keysSecret = secret({ data: { [key]: 'c2VjcmV0', other: 'eA==' } });
      expect(() => sanitizeCopy(keysSecret, { keys })).toThrow(/^Secret dev\/db: a Secret holding SOPS decryption keys .* is never copied/);
      expect(() => sanitizeCopy(secret({ extra: { stringData: { [key]: 'x' } } }), { keys })).toThrow(
        expect.objectContaining({ reason: MirrorErrorReason.NotCopyable }) as Error,
      );
      expect(() => sanitizeCopy(secret({ data: { 'identity.txt': 'eA==' } }), { keys })).not.toThrow();
    },
  );

  it('folds Secret stringData into data, stringData winning', () => {
    const desired = secret({ data: { a: 'b2xk', b: 'Yg==' }, extra: { stringData: { a: 'new' } } });
    const copy = sanitizeCopy(desired, { keys });
    expect(copy.stringData).toBeUndefined();
    expect(copy.data).toEqual({ a: Buffer.from('new').toString('base64'), b: 'Yg==' });
  });

  describe('Services', () => {
    const service = (spec: Record<string, unknown>): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'dev' },
      spec,
      status: { loadBalancer: {} },
    });

    it('lose their allocated cluster IPs, node ports and health-check node port', () => {
      const copy = sanitizeCopy(
        service({
          type: 'LoadBalancer',
          clusterIP: '10.0.0.7',
          clusterIPs: ['10.0.0.7'],
          healthCheckNodePort: 31000,
          externalTrafficPolicy: 'Local',
          selector: { app: 'web' },
          ports: [
            { port: 80, nodePort: 30080 },
            { port: 443, nodePort: 30443 },
          ],
        }),
        { keys },
      );
      expect(copy).toEqual({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: 'dev' },
        spec: { type: 'LoadBalancer', externalTrafficPolicy: 'Local', selector: { app: 'web' }, ports: [{ port: 80 }, { port: 443 }] },
      });
    });

    it('stay headless: clusterIP None is kept', () => {
      const copy = sanitizeCopy(service({ clusterIP: 'None', clusterIPs: ['None'], ports: [{ port: 5432 }] }), { keys });
      expect(copy.spec).toEqual({ clusterIP: 'None', clusterIPs: ['None'], ports: [{ port: 5432 }] });
    });
  });

  it('PersistentVolumeClaims lose their bound volume and binding annotations', () => {
    const pvc: KubeObject = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: 'data',
        namespace: 'dev',
        annotations: { 'pv.kubernetes.io/bind-completed': 'yes', 'volume.kubernetes.io/selected-node': 'n1', keep: 'me' },
      },
      spec: { volumeName: 'pv-1', storageClassName: 'fast', resources: { requests: { storage: '1Gi' } } },
    };
    expect(sanitizeCopy(pvc, { keys })).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'dev', annotations: { keep: 'me' } },
      spec: { storageClassName: 'fast', resources: { requests: { storage: '1Gi' } } },
    });
  });

  it("Jobs lose the controller's generated selector and uid labels (a manual selector is kept)", () => {
    const job = (manualSelector?: boolean): KubeObject => ({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'migrate', namespace: 'dev', labels: { 'batch.kubernetes.io/controller-uid': 'u', 'job-name': 'migrate', app: 'db' } },
      spec: {
        ...(manualSelector === undefined ? {} : { manualSelector }),
        selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': 'u' } },
        template: {
          metadata: {
            labels: {
              'batch.kubernetes.io/controller-uid': 'u',
              'controller-uid': 'u',
              'batch.kubernetes.io/job-name': 'migrate',
              'job-name': 'migrate',
              app: 'db',
            },
          },
          spec: { restartPolicy: 'Never' },
        },
      },
    });
    const copy = sanitizeCopy(job(), { keys });
    expect(copy.metadata.labels).toEqual({ app: 'db' });
    expect(copy.spec).toEqual({ template: { metadata: { labels: { app: 'db' } }, spec: { restartPolicy: 'Never' } } });
    expect((sanitizeCopy(job(true), { keys }).spec as { selector?: unknown }).selector).toBeDefined();
  });

  it('applies the common rules to every kind, and kind rules by group', () => {
    expect(copyRulesFor({ apiVersion: 'example.com/v1', kind: 'Widget' })).toHaveLength(4);
    expect(copyRulesFor({ apiVersion: 'example.com/v1', kind: 'Job' })).toHaveLength(4);
    expect(copyRulesFor({ apiVersion: 'batch/v1', kind: 'Job' })).toHaveLength(5);
  });
});

describe('makeReplica', () => {
  const source = secret({
    metadata: liveMetadata,
    labels: { [keys.syncSource]: 'true', [keys.targets]: 'prod', app: 'web' },
    annotations: { [keys.targets]: '*', [keys.strategy]: 'override', note: 'n' },
    data: { user: 'dQ==', password: 'cA==' },
    type: 'kubernetes.io/basic-auth',
  });

  it('copies the source into the target namespace with the replica marks, never the source marks', () => {
    // when a replica is made for prod
    const replica = makeReplica({ source, targetNamespace: 'prod', keys, strategy: 'override' });
    // then it is the sanitized source, marked as a replica of dev/db, and not a source
    expect(replica).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'db',
        namespace: 'prod',
        labels: { app: 'web', [keys.syncReplica]: 'true', [keys.sourceHash]: hash },
        annotations: { note: 'n', [keys.source]: 'dev/db' },
      },
      type: 'kubernetes.io/basic-auth',
      data: { user: 'dQ==', password: 'cA==' },
    });
  });

  it('a replica is not a mirroring source: parsing it as one fails', () => {
    const replica = makeReplica({ source, targetNamespace: 'prod', keys, strategy: 'override' });
    expect(() => parseMirrorSpec(replica, keys)).toThrow(/is not a mirroring source/);
  });

  it('override: the data is exactly the source data, hand-added keys are reported for removal', () => {
    // given a replica someone edited by hand
    const existing = replicaOf({
      namespace: 'prod',
      data: { user: 'ZXZpbA==', extra: 'eA==' },
      labels: { [keys.stale]: 'true' },
      annotations: { [keys.staleSince]: 't' },
    });
    // when the override replica is made
    const replica = makeReplica({ source, targetNamespace: 'prod', keys, strategy: 'override', existingReplica: existing });
    // then the source data is restored, the stale marks are gone, and `extra` must go
    expect(replica.data).toEqual({ user: 'dQ==', password: 'cA==' });
    expect(replica.metadata.labels).not.toHaveProperty(keys.stale);
    expect(replica.metadata.annotations).not.toHaveProperty(keys.staleSince);
    expect(replicaExtraKeys(existing, replica)).toEqual(['extra']);
  });

  it("patch: writes the source's keys and keeps the replica's others (Secret data)", () => {
    const existing = replicaOf({
      namespace: 'prod',
      data: { user: 'b2xk', local: 'bA==' },
      labels: { team: 'prod-owners' },
      annotations: { 'prod/note': 'x' },
    });
    const replica = makeReplica({ source, targetNamespace: 'prod', keys, strategy: 'patch', existingReplica: existing });
    expect(replica.data).toEqual({ local: 'bA==', user: 'dQ==', password: 'cA==' });
    expect(replica.metadata.labels).toEqual({ team: 'prod-owners', app: 'web', [keys.syncReplica]: 'true', [keys.sourceHash]: hash });
    expect(replica.metadata.annotations).toEqual({ 'prod/note': 'x', note: 'n', [keys.source]: 'dev/db' });
    expect(replicaExtraKeys(existing, replica)).toEqual([]);
  });

  it('patch: a ConfigMap key moving between data and binaryData moves in the replica, other keys stay', () => {
    const cmSource = configMap({ labels: { [keys.syncSource]: 'true' }, data: { a: 'new-a' }, binaryData: { b: 'Yg==' } });
    const existing: KubeObject = {
      ...configMap({
        namespace: 'prod',
        labels: { [keys.syncReplica]: 'true' },
        annotations: { [keys.source]: 'dev/app' },
        data: { b: 'old-b', local: 'l' },
        binaryData: { a: 'YQ==', bin: 'eA==' },
      }),
    };
    const replica = makeReplica({ source: cmSource, targetNamespace: 'prod', keys, strategy: 'patch', existingReplica: existing });
    expect(replica.data).toEqual({ local: 'l', a: 'new-a' });
    expect(replica.binaryData).toEqual({ bin: 'eA==', b: 'Yg==' });
  });

  it('patch: Secret stringData on either side is folded into data before merging', () => {
    const withStringData = secret({ labels: { [keys.syncSource]: 'true' }, data: { a: 'YQ==' }, extra: { stringData: { b: 'bee' } } });
    const existing = replicaOf({ namespace: 'prod', data: { b: 'b2xk', local: 'bA==' } });
    const replica = makeReplica({ source: withStringData, targetNamespace: 'prod', keys, strategy: 'patch', existingReplica: existing });
    expect(replica.stringData).toBeUndefined();
    expect(replica.data).toEqual({ local: 'bA==', a: 'YQ==', b: Buffer.from('bee').toString('base64') });
  });

  it('patch with no existing replica is a plain copy', () => {
    expect(makeReplica({ source, targetNamespace: 'prod', keys, strategy: 'patch' })).toEqual(
      makeReplica({ source, targetNamespace: 'prod', keys, strategy: 'override' }),
    );
  });

  it('refuses to build over a foreign object or another source’s replica', () => {
    const foreign = secret({ namespace: 'prod', data: { mine: 'eA==' } });
    expect(() => makeReplica({ source, targetNamespace: 'prod', keys, strategy: 'patch', existingReplica: foreign })).toThrow(
      expect.objectContaining({ reason: MirrorErrorReason.NotOurReplica }) as Error,
    );
    const other = replicaOf({ namespace: 'prod', source: 'ops/db' });
    expect(() => makeReplica({ source, targetNamespace: 'prod', keys, strategy: 'override', existingReplica: other })).toThrow(
      /is a replica of ops\/db, not of dev\/db/,
    );
  });

  it('keeps the replica name when given one', () => {
    expect(makeReplica({ source, targetNamespace: 'prod', name: 'db-copy', keys, strategy: 'override' }).metadata.name).toBe('db-copy');
  });
});

describe('replicaReplacementReason', () => {
  const desired = (init: { data: Record<string, string>; immutable?: boolean; type?: string }) =>
    secret({
      namespace: 'prod',
      data: init.data,
      ...(init.type === undefined ? {} : { type: init.type }),
      extra: init.immutable === undefined ? {} : { immutable: init.immutable },
    });

  it('is undefined for a mutable replica, or an immutable one whose data stays', () => {
    expect(replicaReplacementReason(desired({ data: { a: '1' } }), desired({ data: { a: '2' } }))).toBeUndefined();
    expect(replicaReplacementReason(desired({ data: { a: '1' }, immutable: true }), desired({ data: { a: '1' }, immutable: true }))).toBeUndefined();
  });

  it('asks for a replacement when an immutable replica must change, or the Secret type changes', () => {
    expect(replicaReplacementReason(desired({ data: { a: '1' }, immutable: true }), desired({ data: { a: '2' }, immutable: true }))).toBe(
      'the replica is immutable and its data changes',
    );
    expect(replicaReplacementReason(desired({ data: { a: '1' }, immutable: true }), desired({ data: { a: '1' } }))).toBe(
      'the replica is immutable and the source no longer is',
    );
    expect(replicaReplacementReason(desired({ data: {} }), desired({ data: {}, type: 'kubernetes.io/tls' }))).toBe(
      'Secret type changes from Opaque to kubernetes.io/tls',
    );
  });
});

describe('makeCopy (ManifestSync)', () => {
  const source = configMap({ labels: { app: 'web', [keys.syncSource]: 'true' }, data: { mode: 'dev', shared: 'x' } });

  it('renames, moves and applies the overlay patch, then the target patch (RFC 7386: null removes)', () => {
    const copy = makeCopy({
      source,
      target: { namespace: 'prod', name: 'app-prod', patch: { data: { mode: 'prod', shared: null } } },
      patch: { metadata: { labels: { tier: 'config' } }, data: { mode: 'overlay' } },
      keys,
    });
    expect(copy).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'app-prod', namespace: 'prod', labels: { app: 'web', tier: 'config' } },
      data: { mode: 'prod' },
    });
  });

  it('refuses a patch that moves or re-kinds the copy, naming the patch', () => {
    expect(() => makeCopy({ source, target: { namespace: 'prod' }, patch: { metadata: { name: 'other' } }, keys })).toThrow(
      /spec\.patch changes metadata\.name/,
    );
    expect(() => makeCopy({ source, target: { namespace: 'prod', patch: { kind: 'Secret' } }, keys })).toThrow(/the patch of target prod changes kind/);
    expect(() => makeCopy({ source, target: { namespace: 'prod', patch: [] as unknown as Record<string, unknown> }, keys })).toThrow(MirrorError);
  });

  it('a patch cannot make the copy a mirroring source or give it an ownership mark', () => {
    const copy = makeCopy({
      source,
      target: {
        namespace: 'prod',
        patch: { metadata: { labels: { [keys.syncSource]: 'true', 'syncline.dev/owner': 'x' }, annotations: { [keys.targets]: '*' } } },
      },
      keys,
    });
    expect(copy.metadata).toEqual({ name: 'app', namespace: 'prod', labels: { app: 'web' } });
  });
});
