// Digests and names of charts as messages and caches use them.
import { createHash } from 'node:crypto';
import type { ChartRequest } from './types.ts';

export const sha256 = (data: Uint8Array): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;

/** `sha256:<hex>` from what an index or a spec says (bare hex, or with the algorithm). */
export function normalizeDigest(digest: string): string {
  const lower = digest.trim().toLowerCase();
  return lower.startsWith('sha256:') ? lower : `sha256:${lower}`;
}

/** The chart as people name it in messages: `oci://host/path/chart` or `https://host/path chart`. */
export function where(request: ChartRequest): string {
  const url = redactUrl(request.url.replace(/\/+$/, ''));
  return url.startsWith('oci://') ? `${url}/${request.chart}` : `${url} chart ${request.chart}`;
}

export function redactUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/)[^/@]*@/i, '$1***@');
}
