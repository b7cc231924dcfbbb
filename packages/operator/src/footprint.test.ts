// The operator's entry points stay light: @kubernetes/client-node (loaded only for exec and auth-provider
// users) is never imported by `syncline run` or the CLI commands.
import { modulesLoadedBy } from '@syncline/test-support/modules';
import { describe, expect, it } from 'vitest';

describe('module footprint', () => {
  // @kubernetes/client-node costs ~80 MB of RSS when imported; `syncline run` and the CLI commands must not load it.
  it.each(['./main.ts', './client.ts', './options.ts'])(
    'importing %s does not load @kubernetes/client-node',
    async (entry) => {
      const result = await modulesLoadedBy(new URL(entry, import.meta.url).href, '@kubernetes/client-node');
      expect(result.stderr).toBe('');
      expect(result.total).toBeGreaterThan(50);
      expect(result.matching).toBe(0);
      // A child Node loading the module graph: seconds on a loaded machine.
    },
    60_000,
  );
});
