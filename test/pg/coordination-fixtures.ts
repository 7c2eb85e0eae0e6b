/**
 * What the coordination tests share: a database with the dataset's schema (migrations/postgres, the coordination
 * tables included), a job of planned tasks, and worker processes run as the real thing would be: node with tsx, killed with real signals.
 */
import { workerArgs } from './worker-entry.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach } from 'vitest';
import { openPgStore } from '../../src/store/pg/open.ts';
import { newMigratedPgDatabase } from './use-pg.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A pool on a test database opened as a worker would open it: the dataset's schema and the coordination tables,
 * all from migrations/postgres.
 */
export async function coordinationDatabase(url: string): Promise<pg.Pool> {
  await (await openPgStore(url)).close();
  return new pg.Pool({ connectionString: url, max: 4 });
}

/**
 * Plans `count` pending tasks of `job` in ledger order: inputs of 1, 2 or 3 pages in turn (the last one cut to
 * fit), pages of an input together. Returns how many inputs.
 */
export async function planTasks(pool: pg.Pool, job: string, count: number): Promise<number> {
  const rows: Array<[string, number]> = [];
  for (let input = 0; rows.length < count; input++) {
    for (let page = 1; page <= (input % 3) + 1 && rows.length < count; page++) rows.push([`in-${String(input).padStart(5, '0')}`, page]);
  }
  await pool.query(
    `INSERT INTO tasks (job, operation, input_key, page, request_json, created_at, updated_at)
     SELECT $1, 'post-details', k, p, jsonb_build_object('url', k, 'page', p), now(), now() FROM unnest($2::text[], $3::int[]) AS u(k, p)`,
    [job, rows.map((r) => r[0]), rows.map((r) => r[1])],
  );
  return new Set(rows.map((r) => r[0])).size;
}

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves with the exit code (or the signal's name) once the process has ended. */
  exited: Promise<number | string>;
  stdout(): string;
  stderr(): string;
}

/** Starts a test worker script (test/pg/workers/) with its settings as one JSON argument. */
export function startWorker(script: string, settings: object): WorkerProcess {
  const child = spawn(process.execPath, [...workerArgs(script), JSON.stringify(settings)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4_000)));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, exited, stdout: () => out, stderr: () => err };
}

/** Polls `check` every `everyMs` until it returns true; fails after `timeoutMs` (generous: the CPU may be busy). */
export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string, everyMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * A coordination test file's bed: after each test its worker processes are killed (SIGKILL, if still running) and
 * its pools ended. `database(prefix)` gives a new database with the coordination tables and a pool on it.
 */
export function coordinationTestBed(): { workers: WorkerProcess[]; database(prefix: string): Promise<{ url: string; pool: pg.Pool }> } {
  const pools: pg.Pool[] = [];
  const workers: WorkerProcess[] = [];
  afterEach(async () => {
    for (const w of workers.splice(0)) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await Promise.all(pools.splice(0).map((p) => p.end()));
  });
  return {
    workers,
    async database(prefix) {
      const url = await newMigratedPgDatabase(prefix);
      const pool = await coordinationDatabase(url);
      pools.push(pool);
      return { url, pool };
    },
  };
}
