import { describe, expect, it } from 'vitest';
import type { EventRecorder } from '@syncline/kube';
import { createActivityLog } from './activity.ts';

describe("activity log (the overview's recent activity)", () => {
  it('remembers what the operator records, passes every event on, and keeps only the newest', async () => {
    // given a recorder wrapped by a log that keeps two entries
    const recorded: string[] = [];
    const inner: EventRecorder = { record: (object, event) => Promise.resolve(void recorded.push(`${object.kind}/${event.reason}`)) };
    const log = createActivityLog({ limit: 2, now: () => new Date('2026-01-01T00:00:00Z') });
    const seen: string[] = [];
    const stop = log.observe((entry) => seen.push(entry.reason));
    const events = log.wrap(inner);
    const sync = { apiVersion: 'syncline.dev/v1alpha1', kind: 'ConfigSync', metadata: { name: 'app', namespace: 'team' } };
    // when three events are recorded for a sync and one for a mirrored Secret
    await events.record(sync, { type: 'Normal', reason: 'Applied', message: 'one' });
    await events.record(sync, { type: 'Warning', reason: 'RenderFailed', message: 'two' });
    await events.record(
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: 'team' } },
      { type: 'Normal', reason: 'Mirrored', message: 'x' },
    );
    stop();
    await events.record(sync, { type: 'Normal', reason: 'Applied', message: 'three' });
    // then all reached the API, the log holds the newest two of the UI's kinds, and listeners saw theirs
    expect(recorded).toEqual(['ConfigSync/Applied', 'ConfigSync/RenderFailed', 'Secret/Mirrored', 'ConfigSync/Applied']);
    expect(log.recent().map((e) => e.message)).toEqual(['two', 'three']);
    expect(log.recent()[0]).toMatchObject({ kind: 'ConfigSync', namespace: 'team', name: 'app', type: 'Warning', at: '2026-01-01T00:00:00.000Z' });
    expect(seen).toEqual(['Applied', 'RenderFailed']);
  });
});
