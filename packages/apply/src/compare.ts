// Does the live object already hold what we would apply? A subset comparison of the desired fields against
// the live ones, tolerant of what the API server normalises (defaults, quantities, Secret stringData,
// omitted empty values), so an unchanged object is recognised without a write.
import type { KubeObject } from './identity.ts';

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei)|(n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$/;
const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

function quantityValue(value: string | number): number | undefined {
  if (typeof value === 'number') return value;
  const match = QUANTITY.exec(value);
  if (match === null) return undefined;
  const base = Number(match[1]);
  if (match[2] !== undefined) return base * (BINARY[match[2]] ?? 1);
  if (match[3] !== undefined) return base * (DECIMAL[match[3]] ?? 1);
  if (match[4] !== undefined) return base * 10 ** Number(match[4]);
  return base;
}

/** `500m` equals `0.5`, `1024Mi` equals `1Gi`: the API server stores quantities in canonical form. */
function sameScalar(desired: unknown, live: unknown): boolean {
  if (desired === live) return true;
  if (typeof live === 'string' && (typeof desired === 'string' || typeof desired === 'number')) {
    const a = quantityValue(desired);
    const b = quantityValue(live);
    return a !== undefined && b !== undefined && Math.abs(a - b) <= Math.abs(b) * 1e-12;
  }
  return false;
}

function isEmpty(value: unknown): boolean {
  if (value === null || value === undefined) return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && Object.keys(value).length === 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Where the comparison is: keys and indices from the root, turned into a path only when something differs. */
type Trail = (string | number)[];

function pathOf(trail: Trail): string {
  let path = '';
  for (const step of trail) path = typeof step === 'number' ? `${path}[${step}]` : path === '' ? step : `${path}.${step}`;
  return path;
}

// Runs for every field of every object on each resync (1,000 objects: most of the planning time), so it builds
// no path string, array or entry list unless a field differs.
function compareValue(desired: unknown, live: unknown, trail: Trail, out: string[]): void {
  if (live === undefined || live === null) {
    // The server omits empty maps, lists and nulls: `labels: {}` in a manifest is already "applied".
    if (!isEmpty(desired)) out.push(pathOf(trail));
    return;
  }
  if (Array.isArray(desired)) {
    if (!Array.isArray(live)) {
      out.push(pathOf(trail));
      return;
    }
    const ofObjects = desired.some((d) => isRecord(d));
    // Lists of objects are usually merged by key (containers, ports, env): entries someone else added are theirs.
    // Lists of scalars are atomic or sets: the length must match too.
    if (ofObjects ? live.length < desired.length : live.length !== desired.length) {
      out.push(pathOf(trail));
      return;
    }
    for (let i = 0; i < desired.length; i++) {
      trail.push(i);
      compareValue(desired[i], live[i], trail, out);
      trail.pop();
    }
    return;
  }
  if (isRecord(desired)) {
    if (!isRecord(live)) {
      out.push(pathOf(trail));
      return;
    }
    for (const key in desired) {
      if (!Object.hasOwn(desired, key)) continue;
      trail.push(key);
      compareValue(desired[key], live[key], trail, out);
      trail.pop();
    }
    return;
  }
  if (!sameScalar(desired, live)) out.push(pathOf(trail));
}

/**
 * The paths of desired fields the live object does not hold (empty when the live object is up to date).
 * `status` is left out: the API server ignores it on apply for kinds with a status subresource.
 */
export function differingPaths(desired: KubeObject, live: KubeObject): string[] {
  const out: string[] = [];
  const { status: _status, stringData, ...rest } = desired;
  compareValue(rest, live, [], out);
  if (desired.kind === 'Secret' && isRecord(stringData)) {
    // stringData is write-only: the server merges it into data, base64-encoded.
    const liveData = isRecord(live['data']) ? live['data'] : {};
    for (const [key, value] of Object.entries(stringData)) {
      if (typeof value !== 'string' || liveData[key] !== Buffer.from(value, 'utf8').toString('base64')) out.push(`stringData.${key}`);
    }
  }
  return out;
}
