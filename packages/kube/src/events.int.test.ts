// The event recorder against the real control plane: identical news counts up one Event (as Kubernetes' own
// recorder does), different news is a new Event.
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig, testNamespace } from '@syncline/test-support/kube';
import { describe, expect, it } from 'vitest';
import { createEventRecorder } from './events.ts';
import { createKubeRest } from './rest.ts';

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const rest = await createKubeRest(kc);

describe('createEventRecorder', () => {
  it('counts up an identical event instead of adding a second one; a different message is a new event', async () => {
    await using ns = await testNamespace({ prefix: 'events' });
    const errors: unknown[] = [];
    const recorder = createEventRecorder({
      rest,
      component: 'syncline',
      host: 'test',
      clock: { now: () => new Date() },
      onError: (error) => errors.push(error),
    });
    const object = { apiVersion: 'syncline.dev/v1alpha1', kind: 'ManifestSync', metadata: { name: 'shared', namespace: ns.name, uid: 'u-1' } };
    await recorder.record(object, { type: 'Warning', reason: 'Conflict', message: 'held by someone else' });
    await recorder.record(object, { type: 'Warning', reason: 'Conflict', message: 'held by someone else' });
    await recorder.record(object, { type: 'Warning', reason: 'Conflict', message: 'held by someone else, and more' });
    expect(errors).toEqual([]);
    const events = (await core.listNamespacedEvent({ namespace: ns.name, fieldSelector: 'involvedObject.name=shared' })).items;
    expect(events.map((e) => [e.message, e.count]).sort((a, b) => String(a[0]).length - String(b[0]).length)).toEqual([
      ['held by someone else', 2],
      ['held by someone else, and more', 1],
    ]);
  });
});
