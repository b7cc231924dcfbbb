import { defineConfig } from 'vitest/config';

// Two projects: `unit` is pure and fast; `integration` runs against the real control plane (started once
// by the global setup) and the real Git server. A file needs the cluster when it ends in `.int.test.ts`.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          // Unit tests first, then the integration project with its own worker count.
          sequence: { groupOrder: 0 },
          include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts', 'scripts/**/*.test.ts'],
          exclude: ['**/*.int.test.ts', '**/node_modules/**'],
          // Some unit tests start a process (Node on the installed tree, git, a render engine): seconds each on a
          // loaded 2-core machine, where vitest's 5 s default fails them while nothing is wrong.
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: 1 },
          include: ['packages/*/src/**/*.int.test.ts', 'test/**/*.int.test.ts'],
          exclude: ['**/node_modules/**'],
          globalSetup: ['test/support/src/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 240_000,
          // Two cores: run integration files two at a time so the control plane keeps up.
          maxWorkers: 2,
        },
      },
    ],
  },
});
