import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts', 'test/pg/global-pg.ts', 'test/pg/global-workers.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests start real sandboxes, child processes and a PostgreSQL server, and wait on them: three forks keep two
    // cores busy (2m46 quiet against 3m14 with two) and stay green with both cores held by other work.
    pool: 'forks',
    maxWorkers: 3,
  },
});
