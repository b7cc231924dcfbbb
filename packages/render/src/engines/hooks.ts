// Helm hooks under Syncline's apply: install and upgrade hooks become apply waves (pre-* before the chart's
// objects, post-* after, ordered by helm.sh/hook-weight), applied and pruned like every other object. Hooks
// that only run on delete, rollback or `helm test` are refused with a message naming them: nothing here runs
// them, and applying them as ordinary objects would run them at the wrong time.
import { RenderError, RenderErrorReason } from '../errors.ts';
import type { PlacedObject } from '../objects.ts';

const HOOK = 'helm.sh/hook';
const HOOK_WEIGHT = 'helm.sh/hook-weight';
const APPLY_WAVE = 'syncline.dev/apply-wave';
/** Waves of hooks sit this far from the chart's objects (wave 0), weights inside that room. */
const HOOK_WAVE_OFFSET = 1000;

const preEvents = new Set(['pre-install', 'pre-upgrade']);
const postEvents = new Set(['post-install', 'post-upgrade']);
const testEvents = new Set(['test', 'test-success']);

export function mapHelmHooks(placed: PlacedObject[], options: { skipTests: boolean }): void {
  for (let i = placed.length - 1; i >= 0; i--) {
    const entry = placed[i];
    if (entry === undefined) continue;
    const raw = entry.object.metadata['annotations'];
    const annotations: Record<string, unknown> = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
    const hook = annotations[HOOK];
    if (typeof hook !== 'string') continue;
    const events = hook
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '');
    const id = `${entry.object.kind}/${entry.object.metadata.name}`;
    if (events.some((e) => testEvents.has(e))) {
      if (options.skipTests) {
        placed.splice(i, 1);
        continue;
      }
      throw new RenderError({
        reason: RenderErrorReason.EngineRefused,
        file: entry.origin.file,
        detail: `helm: ${id} is a test hook (${hook}): Syncline does not run helm test; leave skipTests on`,
      });
    }
    const pre = events.some((e) => preEvents.has(e));
    const post = events.some((e) => postEvents.has(e));
    if (!pre && !post) {
      throw new RenderError({
        reason: RenderErrorReason.EngineRefused,
        file: entry.origin.file,
        detail: `helm: ${id} is a ${hook} hook: Syncline maps only install and upgrade hooks (to apply waves) and runs nothing on delete or rollback`,
      });
    }
    if (annotations[APPLY_WAVE] !== undefined) continue;
    const weight = Math.max(
      -(HOOK_WAVE_OFFSET - 1),
      Math.min(HOOK_WAVE_OFFSET - 1, Number.parseInt(typeof annotations[HOOK_WEIGHT] === 'string' ? annotations[HOOK_WEIGHT] : '0', 10) || 0),
    );
    const wave = pre ? weight - HOOK_WAVE_OFFSET : weight + HOOK_WAVE_OFFSET;
    entry.object = { ...entry.object, metadata: { ...entry.object.metadata, annotations: { ...annotations, [APPLY_WAVE]: String(wave) } } };
  }
}
