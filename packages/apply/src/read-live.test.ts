// readLive's reads, counted with a client that answers from memory: which scopes are listed and with what selector
// when a watch vouches that an owner has nothing in a scope (ownerAbsent).
import { describe, expect, it } from 'vitest';
import { readLive } from './execute.ts';
import { OWNER_LABEL, objectId, ownerHash, type KubeObject, type Owner } from './identity.ts';
import type { ApplyClient } from './client.ts';

const owner: Owner = { namespace: 'apps', name: 'web', target: 'prod' };
const selector = `${OWNER_LABEL}=${ownerHash(owner)}`;
const cm = (name: string, labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'apps', labels },
  data: { k: name },
});
const secret = (name: string, labels: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'apps', labels },
});

/** A client holding `stored`, recording each LIST as `Kind selector`. */
function memoryClient(stored: readonly KubeObject[]): { client: ApplyClient; lists: string[] } {
  const lists: string[] = [];
  const unused = (): never => {
    throw new Error('readLive only lists');
  };
  const client: ApplyClient = {
    discovery: unused,
    get: unused,
    apply: unused,
    jsonPatch: unused,
    delete: unused,
    waitEstablished: unused,
    list: ({ kind, namespace, labelSelector }) => {
      lists.push(`${kind} ${labelSelector ?? '(all)'}`);
      const [key, value] = (labelSelector ?? '').split('=');
      return Promise.resolve(
        stored.filter((o) => o.kind === kind && o.metadata.namespace === namespace && (key === undefined || key === '' || o.metadata.labels?.[key] === value)),
      );
    },
  };
  return { client, lists };
}

describe('readLive with ownerAbsent (a watch vouching that the owner has nothing in a scope)', () => {
  it("sends no LIST for a vouched scope, its desired objects left to resolve as after an empty LIST; other scopes list the owner's objects", async () => {
    // given an owned Secret from an earlier apply (not in the inventory: a lost status write) and nothing of ours among the ConfigMaps
    const lostSecret = secret('lost', { [OWNER_LABEL]: ownerHash(owner) });
    const { client, lists } = memoryClient([cm('theirs', { [OWNER_LABEL]: 'someone-else' }), lostSecret]);
    const vouched: string[] = [];
    const live = await readLive({
      client,
      desired: [cm('a'), cm('b'), secret('s')],
      inventory: [],
      owner,
      ownerAbsent: (scope) => {
        vouched.push(`${scope.group}/${scope.kind}/${scope.namespace}`);
        return scope.kind === 'ConfigMap';
      },
    });
    // then only the Secret scope is listed (by the owner's label) and finds the unrecorded Secret, its proof kept
    expect(lists).toEqual([`Secret ${selector}`]);
    expect(vouched.sort()).toEqual(['/ConfigMap/apps', '/Secret/apps']);
    expect([...live.objects.keys()]).toEqual([objectId(lostSecret)]);
    expect([...(live.unresolved ?? [])].sort()).toEqual([objectId(cm('a')), objectId(cm('b')), objectId(secret('s'))].sort());
    expect(live.unknownScopes?.size ?? 0).toBe(0);
  });

  it('lists a vouched scope whole when more of it is missing than is worth resolving one by one, as after an empty LIST', async () => {
    const { client, lists } = memoryClient([cm('theirs')]);
    const many = Array.from({ length: 20 }, (_, i) => cm(`new-${i}`));
    const live = await readLive({ client, desired: many, inventory: [], owner, ownerAbsent: () => true });
    expect(lists).toEqual(['ConfigMap (all)']);
    expect(live.objects.has(objectId(cm('theirs')))).toBe(true);
    expect(live.unresolved?.size ?? 0).toBe(0);
  });

  it('lists as before where the watch does not vouch, and without an owner', async () => {
    const { client, lists } = memoryClient([]);
    await readLive({ client, desired: [cm('a')], inventory: [], owner, ownerAbsent: () => false });
    await readLive({ client, desired: [cm('a')], inventory: [], ownerAbsent: () => true });
    expect(lists).toEqual([`ConfigMap ${selector}`, 'ConfigMap (all)']);
  });
});
