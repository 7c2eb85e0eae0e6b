import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts', 'test/pg/global-pg.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests start real sandboxes and child processes; two cores means two forks at most.
    pool: 'forks',
    maxWorkers: 2,
  },
});
