// The outcome of a no-op resync, kept for the next one. A sync's status is a function of the ConfigSync as the cache
// holds it (its spec, its previous status), the revision, each target's outcome, the rendered objects, which engine
// rendered each target, the interval notice and the time; a resync that changed nothing computes the status it
// read, and computing it again from the very same inputs gives it again. So when every input is the one the kept
// outcome was computed from (by identity: the cache hands out a new object for any change to the ConfigSync, and a
// target's outcome is the very one only while its no-op proof holds, see target.ts), that outcome stands, and the
// status is neither built nor compared field by field again (the shell sees the same status object, see
// @syncline/runtime's writeStatus).
//
// Kept only for an outcome that does not depend on the time: nothing written or announced (no Event), the status
// the one already stored, every target healthy or not judged, no hook running, and the next run at the refresh
// interval. A waiting health check or hook runs out with time, so such an outcome is computed every time.
import type { ConfigSync } from '@syncline/api';
import type { KubernetesObject } from '@syncline/render';
import type { ReconcileOutcome } from '@syncline/runtime';
import type { TargetOutcome } from './target.ts';

/** Every input of a sync's outcome but the time and the refresh interval's jitter. */
export type SteadyInputs = {
  readonly object: ConfigSync;
  readonly spec: object;
  readonly revision: string;
  readonly targets: readonly TargetOutcome[];
  readonly desired: readonly KubernetesObject[];
  /** Which engine (and published chart) rendered each target, as one string. */
  readonly renderedBy: string;
  readonly refreshAdjusted: string | undefined;
};

type Kept<S> = { readonly inputs: SteadyInputs; readonly status: S };

export class SteadyOutcomes<S extends object> {
  readonly #kept = new WeakMap<ConfigSync, Kept<S>>();

  /** The status kept for exactly these inputs, or undefined. */
  status(inputs: SteadyInputs): S | undefined {
    const kept = this.#kept.get(inputs.object);
    return kept !== undefined && sameInputs(kept.inputs, inputs) ? kept.status : undefined;
  }

  /**
   * Keeps `outcome` for `inputs` when it is a no-op that does not depend on the time (see the header): `stored` is
   * whether its status is the one the ConfigSync holds, `refreshMs` this run's interval.
   */
  keep(
    inputs: SteadyInputs,
    outcome: { status: S; result: ReconcileOutcome; events: readonly unknown[] },
    input: { stored: boolean; refreshMs: number },
  ): void {
    const timeless =
      input.stored &&
      outcome.events.length === 0 &&
      outcome.result.kind === 'done' &&
      outcome.result.requeueAfterMs === input.refreshMs &&
      inputs.targets.every(
        (t) => t.status.hooks === undefined && (t.health === undefined || (t.health.failed.length === 0 && t.health.progressing.length === 0)),
      );
    if (timeless) this.#kept.set(inputs.object, { inputs, status: outcome.status });
    else this.#kept.delete(inputs.object);
  }
}

function sameInputs(a: SteadyInputs, b: SteadyInputs): boolean {
  return (
    a.object === b.object &&
    a.spec === b.spec &&
    a.revision === b.revision &&
    a.renderedBy === b.renderedBy &&
    a.refreshAdjusted === b.refreshAdjusted &&
    sameItems(a.targets, b.targets) &&
    sameItems(a.desired, b.desired)
  );
}

function sameItems(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
