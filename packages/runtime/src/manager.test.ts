// The controller manager with fake informers (the real ones, against the control plane, are in the operator's
// controllers.int.test.ts): each controller's lane is seen by liveness and the queue metrics, one that stalls is
// named, its lane's slots are its own, and the caches are waited for before the first reconcile.
import type { Informer } from '@syncline/kube';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createManager, type ControllerDeclaration, type LaneState, type Manager } from './manager.ts';
import { SlotPool, type ReconcileOutcome } from './queue.ts';

/** An informer as the manager uses it: started, stopped, synced when the test says so. */
function fakeInformer(synced = true): Informer & { sync(): void; started: boolean } {
  const state = { synced, started: false, waiters: [] as (() => void)[] };
  const fake = {
    get synced() {
      return state.synced;
    },
    healthy: true,
    get started() {
      return state.started;
    },
    start: () => {
      state.started = true;
    },
    stop: () => {
      state.started = false;
      return Promise.resolve();
    },
    waitSynced: () => (state.synced ? Promise.resolve(true) : new Promise<boolean>((resolve) => state.waiters.push(() => resolve(true)))),
    sync: () => {
      state.synced = true;
      for (const wake of state.waiters.splice(0)) wake();
    },
  };
  return fake as unknown as Informer & { sync(): void; started: boolean };
}

const until = async (check: () => boolean, what: string): Promise<void> => {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

/** Lets every hung reconcile finish, and those that start after them (a stopped manager waits for its reconciles). */
async function releaseAll(release: (() => void)[]): Promise<void> {
  for (let i = 0; i < 20; i++) {
    for (const go of release.splice(0)) go();
    await new Promise((r) => setTimeout(r, 5));
  }
}

function testManager(stallTimeoutMs = 10 * 60_000): { manager: Manager; scrape: () => readonly LaneState[]; leader: number[] } {
  const sources: (() => readonly LaneState[])[] = [];
  const leader: number[] = [];
  const manager = createManager({
    logger: pino({ level: 'silent' }),
    metrics: { leader: { set: (v) => leader.push(v) }, trackQueue: (source) => (sources.push(source), () => sources.splice(sources.indexOf(source), 1)) },
    stallTimeoutMs,
  });
  return { manager, scrape: () => sources.flatMap((s) => s()), leader };
}

const NAMES = ['configsync', 'mirror', 'namespacereplicationpolicy', 'dr-auto-failover', 'notifications'] as const;

describe('controller manager', () => {
  it.each(NAMES)('names the stalled controller (%s) in liveness and in the queue metrics, and only that one', async (stalledName) => {
    const { manager, scrape } = testManager(150);
    const release: (() => void)[] = [];
    const runs = new Map<string, number>();
    for (const name of NAMES) {
      manager.register(name, { concurrency: 1 }, () => ({
        for: fakeInformer(),
        keys: () => ['a', 'b'],
        reconcile: (): Promise<ReconcileOutcome> => {
          runs.set(name, (runs.get(name) ?? 0) + 1);
          // The stalled one never finishes (until the test lets it go, to stop).
          if (name === stalledName) return new Promise((resolve) => release.push(() => resolve({ kind: 'done' })));
          return Promise.resolve({ kind: 'done' });
        },
      }));
    }
    manager.start();
    try {
      await until(() => !manager.live().ok, 'liveness to fail');
      const live = manager.live();
      expect(live.ok).toBe(false);
      const reason = live.ok ? '' : live.reason;
      expect(reason).toContain(`controller ${stalledName}:`);
      for (const other of NAMES.filter((n) => n !== stalledName)) {
        expect(reason).not.toContain(`controller ${other}:`);
        // The others went on meanwhile: both their keys ran.
        expect(runs.get(other)).toBe(2);
      }
      const lanes = new Map(scrape().map((lane) => [lane.controller, lane]));
      expect([...lanes.keys()].sort()).toEqual([...NAMES].sort());
      expect(lanes.get(stalledName)).toMatchObject({ depth: 1, inFlight: 1 });
      expect(lanes.get(stalledName)?.stalledSeconds).toBeGreaterThan(0.15);
      for (const other of NAMES.filter((n) => n !== stalledName))
        expect(lanes.get(other)).toEqual({ controller: other, depth: 0, inFlight: 0, stalledSeconds: 0 });
    } finally {
      await releaseAll(release);
      await manager.stop();
    }
  });

  it("waits for a controller's own caches before its first reconcile, without holding the others back", async () => {
    const { manager, leader } = testManager();
    const slowCache = fakeInformer(false);
    const watch = fakeInformer(false);
    const ran: string[] = [];
    const declare = (name: string, caches: Informer[], watches: Informer[] = []): ControllerDeclaration<string> => ({
      caches,
      watches,
      keys: () => ['k'],
      reconcile: () => {
        ran.push(name);
        return Promise.resolve({ kind: 'done' });
      },
    });
    manager.register('slow', { concurrency: 1 }, () => declare('slow', [slowCache]));
    manager.register('fast', { concurrency: 1 }, () => declare('fast', [fakeInformer()], [watch]));
    manager.start();
    try {
      // Every declared informer is started; a watch that never syncs holds nobody back.
      expect(slowCache.started && watch.started).toBe(true);
      await until(() => ran.includes('fast'), 'the controller whose caches are synced');
      expect(ran).toEqual(['fast']);
      expect(leader).toEqual([1]);
      slowCache.sync();
      await until(() => ran.includes('slow'), 'the other, once its cache synced');
    } finally {
      await manager.stop();
    }
    expect(slowCache.started || watch.started).toBe(false);
  });

  it("gives each lane its own slots: a controller whose reconciles hang does not hold another's keys; a shared pool bounds a group", async () => {
    const { manager, scrape } = testManager();
    const pool = new SlotPool(2);
    const release: (() => void)[] = [];
    const hang = (): Promise<ReconcileOutcome> => new Promise((resolve) => release.push(() => resolve({ kind: 'done' })));
    let quick = 0;
    manager.register('slow', { concurrency: 4 }, () => ({ keys: () => ['1', '2', '3', '4', '5', '6'], reconcile: hang }));
    manager.register('quick', { concurrency: 1 }, () => ({
      keys: () => ['1', '2', '3'],
      reconcile: () => {
        quick++;
        return Promise.resolve({ kind: 'done' });
      },
    }));
    // Two controllers sharing two slots between them (as the operator's kinds share --concurrency).
    manager.register('group-a', { concurrency: 2, pool }, () => ({ keys: () => ['1', '2', '3'], reconcile: hang }));
    manager.register('group-b', { concurrency: 2, pool }, () => ({ keys: () => ['1', '2'], reconcile: hang }));
    manager.start();
    try {
      await until(() => quick === 3, 'the quick controller to finish its keys');
      const lanes = new Map(scrape().map((lane) => [lane.controller, lane]));
      expect(lanes.get('slow')).toMatchObject({ inFlight: 4, depth: 2 });
      expect((lanes.get('group-a')?.inFlight ?? 0) + (lanes.get('group-b')?.inFlight ?? 0)).toBe(2);
      // A slot freed in the group goes to the lane that waited for one.
      const groupRelease = release.length;
      release.splice(groupRelease - 1, 1)[0]?.();
      await until(
        () => (scrape().find((l) => l.controller === 'group-a')?.inFlight ?? 0) + (scrape().find((l) => l.controller === 'group-b')?.inFlight ?? 0) === 2,
        'the freed slot to be taken',
      );
    } finally {
      await releaseAll(release);
      await manager.stop();
    }
  });

  it('refuses a second controller of the same name, and registrations after the start', () => {
    const { manager } = testManager();
    const declare = (): ControllerDeclaration<string> => ({ keys: () => [], reconcile: () => Promise.resolve({ kind: 'done' }) });
    manager.register('one', { concurrency: 1 }, declare);
    expect(() => manager.register('one', { concurrency: 1 }, declare)).toThrow(/registered twice/);
    manager.start();
    expect(() => manager.register('two', { concurrency: 1 }, declare)).toThrow(/after the manager started/);
    return manager.stop();
  });
});
