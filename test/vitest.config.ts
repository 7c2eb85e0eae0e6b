import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts', 'test/pg/global-pg.ts', 'test/pg/global-workers.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests start real sandboxes, child processes and a PostgreSQL server, and wait on them: three forks keep two
    // cores busy (with two, the suite took a fifth longer) and stay green with both cores held by other work.
    pool: 'forks',
    maxWorkers: 3,
    // The suite is CPU-bound on two cores, and each test file importing the sources afresh was a fifth of it:
    // a fork keeps its module cache from one file to the next (2m28 quiet against 2m50). No test mocks a
    // module, and the few that change process.env or fake timers put them back.
    isolate: false,
  },
});
