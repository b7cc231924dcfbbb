// The webhook secrets: one Kubernetes Secret whose keys are provider names (github, gitlab, gitea,
// bitbucket, generic). A key may hold several secrets, one per line, so a rotation can overlap. The
// Secret is re-read after `maxAgeMs`, and early when a signature fails (it may just have been rotated),
// at most once per `minRefreshMs` so bad requests cannot turn into API-server load. Values never leave
// this module except into the signature checks.
import { isStatus, type KubeRest } from '@syncline/kube';
import type { Provider } from './providers.ts';

export type WebhookSecrets = {
  /** The secrets for a provider (empty when none are configured); `fresh` re-reads first unless read within minRefreshMs. */
  get(provider: Provider, options?: { fresh?: boolean }): Promise<readonly string[]>;
};

export function createWebhookSecrets(options: {
  rest: KubeRest;
  namespace: string;
  name: string;
  maxAgeMs?: number;
  minRefreshMs?: number;
  now?: () => number;
}): WebhookSecrets {
  const maxAgeMs = options.maxAgeMs ?? 60_000;
  const minRefreshMs = options.minRefreshMs ?? 5_000;
  const now = options.now ?? Date.now;
  let cached: { at: number; values: Map<string, string[]> } | undefined;
  let reading: Promise<Map<string, string[]>> | undefined;

  const read = (): Promise<Map<string, string[]>> => {
    reading ??= (async () => {
      try {
        const secret = await options.rest.request<{ data?: Record<string, string> | null }>({
          method: 'GET',
          path: `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/secrets/${encodeURIComponent(options.name)}`,
          timeoutMs: 10_000,
        });
        const values = new Map<string, string[]>();
        for (const [key, encoded] of Object.entries(secret.data ?? {})) {
          const lines = Buffer.from(encoded, 'base64')
            .toString('utf8')
            .split(/\r?\n/)
            .map((line) => line.trim())
            .filter((line) => line !== '');
          values.set(key, lines);
        }
        cached = { at: now(), values };
        return values;
      } catch (error) {
        // A missing Secret means no provider is configured, not an outage.
        if (isStatus(error, 404)) {
          cached = { at: now(), values: new Map() };
          return cached.values;
        }
        throw new Error(
          `could not read the webhook Secret ${options.namespace}/${options.name}: ${isStatus(error, 403) ? 'forbidden' : error instanceof Error ? error.message : String(error)}`,
        );
      } finally {
        reading = undefined;
      }
    })();
    return reading;
  };

  return {
    async get(provider, getOptions = {}) {
      const age = cached === undefined ? Infinity : now() - cached.at;
      const stale = age >= maxAgeMs || (getOptions.fresh === true && age >= minRefreshMs);
      const values = cached !== undefined && !stale ? cached.values : await read();
      return values.get(provider) ?? [];
    },
  };
}

/** `NAMESPACE/NAME`, or `NAME` in the default namespace. */
export function parseSecretRef(text: string, defaultNamespace: string): { namespace: string; name: string } {
  const parts = text.split('/');
  const [first, second] = parts;
  if (parts.length === 1 && first !== undefined && first !== '') return { namespace: defaultNamespace, name: first };
  if (parts.length === 2 && first !== undefined && first !== '' && second !== undefined && second !== '') return { namespace: first, name: second };
  throw new Error(`--webhook-secret "${text}" is not NAMESPACE/NAME`);
}
