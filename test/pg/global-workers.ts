/**
 * The PostgreSQL tests start worker processes (test/pg/workers/*.ts) by the dozen. Run through tsx, each would
 * compile the sources again on start (about 0.5 s of CPU a process, on a two-core machine the suite's budget);
 * bundled here once per test run with esbuild, each starts as plain Node. The bundles go in a folder of this run's
 * own under test/pg/workers/ (so that Node finds node_modules and the code its package root), removed at the
 * end: two test runs at once never load each other's half-written files.
 *
 * The dependencies are bundled too, the ones used, once each: Node resolving and compiling drizzle-orm, zod, pg
 * and undici file by file was a third of a worker's start (a worker of one task: 0.90 -> 0.69 s of CPU, 8
 * alternating rounds). These workers are the tests' own processes; the CLI the tests spawn is dist/ as users get
 * it. Left outside: the native SQLite binding, pg's optional native client, and tsx (it loads files beside it).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';

const WORKERS = fileURLToPath(new URL('./workers/', import.meta.url));

declare module 'vitest' {
  export interface ProvidedContext {
    /** The folder holding the bundled test workers (<name>.mjs for workers/<name>.ts). */
    pgWorkersDir: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const outdir = mkdtempSync(join(WORKERS, '.built-'));
  const entries = readdirSync(WORKERS).filter((f) => f.endsWith('.ts'));
  await build({
    entryPoints: entries.map((f) => join(WORKERS, f)),
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['better-sqlite3', 'pg-native', 'tsx', 'tsx/*'],
    // Bundled CommonJS dependencies call require() for Node's modules, which an ES module has not by itself. And
    // undici's WebAssembly parser left to Liftoff, as the CLI does (src/cli/start.ts): no TurboFan recompile per worker.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" +
        " import { setFlagsFromString as __setV8Flags } from 'node:v8'; __setV8Flags('--liftoff-only');",
    },
    logLevel: 'warning',
  });
  project.provide('pgWorkersDir', outdir);
  return () => rmSync(outdir, { recursive: true, force: true });
}
