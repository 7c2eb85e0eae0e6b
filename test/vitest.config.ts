import { defineConfig } from 'vitest/config';

/**
 * The global setups, by what a kind of test needs: a temporary folder on tmpfs (every kind), the built CLI (dist/,
 * for spawned CLIs), and a PostgreSQL cluster with the bundled test workers. test/unit/ needs only the first.
 */
const TMP = ['test/global-tmpdir.ts'];
const BUILD = [...TMP, 'test/global-setup.ts'];
const PG = ['test/pg/global-pg.ts', 'test/pg/global-workers.ts'];

/** The suite's settings, for the test files `include` names, with the global setups they need. */
export function testConfig(include: string[], globalSetup: string[]) {
  return defineConfig({
    test: {
      root: new URL('..', import.meta.url).pathname,
      include,
      globalSetup,
      setupFiles: ['test/support/pin-esbuild-cwd.ts'],
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
      // Each test file and source is transformed (esbuild) by vitest's main process for every run: kept on disk
      // between runs (node_modules/.experimental-vitest-cache, keyed by path, content and config), the main process
      // of a run whose files are unchanged takes about half the CPU (test/unit/: 3.7 -> 1.7 s).
      experimental: { fsModuleCache: true },
    },
  });
}

/**
 * `npm test`: test/unit/, test/e2e/ and test/pg/ (see scripts/split-tests.mjs). test/package/ (the packed tarball
 * installed, dist/ rebuilt under running CLIs: a minute and a half of builds on two cores) is `npm run
 * test:package`, which CI runs after it (.ci/run), so `npm test` stays within its 3 minutes.
 */
export default testConfig(['test/{unit,e2e,pg}/**/*.test.ts'], [...BUILD, ...PG]);

/** `npm run test:unit`: in-process tests, no server and no build. */
export const unitConfig = testConfig(['test/unit/**/*.test.ts'], TMP);
/** `npm run test:e2e`: tests that start the CLI or other processes, from dist/. */
export const e2eConfig = testConfig(['test/e2e/**/*.test.ts'], BUILD);
/** `npm run test:package`: the package as users get it (npm pack, install, a rebuild under running CLIs). */
export const packageConfig = testConfig(['test/package/**/*.test.ts'], BUILD);
/** `npm run test:pg`: tests against a real PostgreSQL server. */
export const pgConfig = testConfig(['test/pg/**/*.test.ts'], [...BUILD, ...PG]);
