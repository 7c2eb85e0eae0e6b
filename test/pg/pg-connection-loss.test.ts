/**
 * A PostgreSQL server that drops a worker's connections mid-run (a restart, `pg_terminate_backend`, an
 * `idle_in_transaction_session_timeout`): the worker must not die of an unhandled 'error' event, but stop with its
 * summary, and its run row must not stay `running`.
 */
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { openPgStore } from '../../src/store/pg/open.ts';
import { newMigratedPgDatabase, pgClusterUrl, lockHolders, pgSkipReason } from './use-pg.ts';
import { waitFor as waitUntil } from './coordination-fixtures.ts';
import { gatedApi } from './gated-api.ts';
import { one, setUp, startWorker, useCleanups } from './run-workers.ts';
import { operationRequests } from '../support/run-helpers.ts';
import { cuttableProxy } from './cuttable-proxy.ts';

useCleanups();

/**
 * Ends every session of the dataset's database but the caller's own, as a server restart would; or, with
 * `sparing`, all but those (the dataset lock's holders): the worker's pooled connections only.
 */
async function terminateAll(url: string, sparing: readonly number[] = []): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rowCount } = await client.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> ALL($1::int[])',
      [sparing],
    );
    return rowCount ?? 0;
  } finally {
    await client.end();
  }
}

/** Waits until `client`'s connection has ended, as the server ended it. */
function ended(client: pg.PoolClient): Promise<void> {
  return new Promise((resolve) => client.once('end', () => resolve()));
}

/** A worker mid-run: its dataset, its gated API and the worker itself, stopped at its first answers. */
interface MidRun {
  s: Awaited<ReturnType<typeof setUp>>;
  api: Awaited<ReturnType<typeof gatedApi>>;
  worker: ReturnType<typeof startWorker>;
}

/**
 * What the three worker cases share: 60 tasks on a new dataset, a worker started against an API that answers 6
 * calls and holds the rest, and the wait until those 6 are written; `use` then cuts the server away from it and
 * the API lets the rest through. The API is stopped however `use` ends.
 */
async function withWorkerMidRun(prefix: string, use: (run: MidRun) => Promise<void>): Promise<void> {
  const ALLOWED = 6;
  const s = await setUp(60, prefix);
  await (await openPgStore(s.url)).close();
  s.pool.on('error', () => undefined);
  const api = await gatedApi(s.sandbox.url);
  try {
    api.allow(ALLOWED);
    const worker = startWorker(s, { apiUrl: api.url });
    await waitUntil(
      async () => s.sandbox.requests.length >= ALLOWED && (await one(s.pool, 'SELECT count(*) AS n FROM api_calls WHERE status = 200')) >= operationRequests(s.sandbox).length,
      30_000,
      'the first calls written',
    );
    await use({ s, api, worker });
  } finally {
    await api.stop();
  }
}

/** The worker's exit code once the API lets everything through, checked to be no crash by an unhandled 'error' event. */
async function exitOf({ api, worker }: MidRun): Promise<number | string> {
  api.allow(Infinity);
  const code = await worker.exited;
  expect(worker.stderr()).not.toMatch(/Unhandled 'error' event/);
  return code;
}

/** The worker's summary (its last line), whose status its runs row holds too. */
async function summaryInRuns<T extends { status: string; runId: number }>({ s, worker }: MidRun): Promise<T> {
  const summary = JSON.parse(worker.stdout().trim().split('\n').at(-1)!) as T;
  const rows = (await s.pool.query<{ status: string }>('SELECT status FROM runs WHERE id = $1', [summary.runId])).rows;
  expect(rows).toEqual([{ status: summary.status }]);
  return summary;
}

describe.skipIf(!pgClusterUrl)(`a worker whose connections the server drops${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('a checked-out client whose session is terminated or times out idle in a transaction does not crash the process', async () => {
    const url = await newMigratedPgDatabase('conn_client');
    const store = await openPgStore(url);
    try {
      const terminated = await store.pool.connect();
      const pid = Number((await terminated.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      const gone = ended(terminated);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await admin.end();
      await gone;
      await expect(terminated.query('SELECT 1')).rejects.toThrow();
      terminated.release(true);

      const idle = await store.pool.connect();
      await idle.query(`SET idle_in_transaction_session_timeout = '50ms'`);
      const timedOut = ended(idle);
      await idle.query('BEGIN');
      await timedOut;
      await expect(idle.query('SELECT 1')).rejects.toThrow();
      idle.release(true);
      // The pool still serves: a new connection.
      expect((await store.pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await store.close();
    }
  });

  it('stops with its summary, no unhandled error event, and its run row closed', async () => {
    await withWorkerMidRun('conn_loss', async (run) => {
      expect(await terminateAll(run.s.url)).toBeGreaterThan(0);
      expect(await exitOf(run), run.worker.stderr()).toBe(0);
      const summary = await summaryInRuns<{ status: string; runId: number; error: { code: string; message: string } }>(run);
      // Stopped as by an error (exit 1), which names what happened: not "taken over while it was not running".
      expect(summary.status, run.worker.stdout()).toBe('failed');
      expect(summary.error.code).toBe('LOCK_LOST');
      expect(summary.error.message).toMatch(/ended the session holding this run's lock/);
    });
  }, 90_000);

  it('writes the answers it had in flight when the server ended its sessions, and counts each paid call once', async () => {
    await withWorkerMidRun('conn_in_flight', async (run) => {
      const { s } = run;
      const sessions = (await s.pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'netingest'`)).rows.map((r) => r.pid);
      await terminateAll(s.url);
      // Its sessions gone (the writer's among them, idle between groups), then its held calls are answered.
      // The test's own idle sessions were ended too: a query may meet one before the pool has seen it go, and fail
      // ("terminating connection due to administrator command", once at load 8); the pool drops it, the next asks anew.
      const left = async () => Number((await s.pool.query('SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ANY($1::int[])', [sessions])
        .catch(() => ({ rows: [{ n: -1 }] }))).rows[0].n);
      // Gone at the server, so the worker has their ends queued before any held answer comes (api.allow, next).
      await waitUntil(async () => (await left()) === 0, 10_000, 'its sessions to end');
      expect(await exitOf(run), run.worker.stderr()).toBe(0);
      const summary = await summaryInRuns<{ status: string; runId: number; calls: number }>(run);
      const paid = operationRequests(s.sandbox).length;
      expect(paid).toBeGreaterThan(6);
      expect(await one(s.pool, 'SELECT count(*) AS n FROM api_calls WHERE status IS NOT NULL')).toBe(paid);
      expect(summary.calls).toBe(paid);
    });
  }, 90_000);

  it('counts the calls its writer could not write once the database failed a write (a full disk), in its summary and its runs row', async () => {
    await withWorkerMidRun('writer_failed', async (run) => {
      const { s } = run;
      await s.pool.query(`CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$`);
      await s.pool.query('CREATE TRIGGER disk_full BEFORE INSERT ON api_calls FOR EACH ROW EXECUTE FUNCTION disk_full()');
      expect(await exitOf(run), run.worker.stderr()).toBe(0);
      const summary = await summaryInRuns<{ status: string; runId: number; calls: number; error: { code: string } }>(run);
      expect(summary.error.code, run.worker.stdout()).not.toBe('LOCK_LOST');
      const paid = operationRequests(s.sandbox).length;
      expect(await one(s.pool, 'SELECT count(*) AS n FROM api_calls')).toBeLessThan(paid);
      expect(summary.calls).toBe(paid);
      expect(await one(s.pool, `SELECT calls AS n FROM runs WHERE id = ${summary.runId}`)).toBe(paid);
    });
  }, 90_000);

  it('a worker whose pooled connections (not its lock session) are ended goes on or stops with its summary, never crashes', async () => {
    await withWorkerMidRun('conn_pool_loss', async (run) => {
      await terminateAll(run.s.url, [...(await lockHolders(run.s.pool))]);
      expect(await exitOf(run), run.worker.stderr()).toBe(0);
      expect((await summaryInRuns(run)).status).not.toBe('running');
    });
  }, 90_000);

  it('a worker whose server goes away and stays away stops saying the connection to the database was lost', async () => {
    const s = await setUp(30, 'conn_cut');
    await (await openPgStore(s.url)).close();
    const proxy = await cuttableProxy(s.url);
    const api = await gatedApi(s.sandbox.url);
    try {
      api.allow(4);
      // The server never comes back: how long the writer and the run's end wait for it (twice SERVER_BACK_WITHIN_MS,
      // 10 of the test's 11 s) is not what is checked, only that the worker then stops saying why.
      const worker = startWorker({ ...s, url: proxy.url }, { apiUrl: api.url, serverBackWithinMs: 500 });
      await waitUntil(
        async () => s.sandbox.requests.length >= 4 && (await one(s.pool, 'SELECT count(*) AS n FROM api_calls WHERE status = 200')) >= operationRequests(s.sandbox).length,
        30_000,
        'the first calls written',
      );
      await proxy.cut();
      api.allow(Infinity);
      expect(await worker.exited).not.toBe(0);
      // The run's end could not be written: the next run closes it as abandoned (the test above).
      expect(worker.stderr()).toMatch(/lost the connection to database postgres:\/\/[^ ]+ \(.*\): the server ended the session \(a restart, a stop, pg_terminate_backend\) or cannot be reached/);
      expect(worker.stderr()).toContain("code: 'DB_CONNECTION_LOST'");
      expect((await s.pool.query('SELECT status FROM runs')).rows).toEqual([{ status: 'running' }]);
    } finally {
      await api.stop();
    }
  }, 90_000);

  it('a worker that cannot reach the server at its end stops without crashing; the next run closes its run as abandoned', async () => {
    await withWorkerMidRun('conn_gone', async (run) => {
      const { s } = run;
      const database = new URL(s.url).pathname.slice(1);
      const admin = new pg.Client({ connectionString: new URL('/postgres', s.url).toString() });
      await admin.connect();
      try {
        // The database is gone for the worker: no session left, no new one allowed.
        await admin.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS false`);
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [database]);
        expect(await exitOf(run), run.worker.stderr()).not.toBe(0);
        await admin.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`);
        const check = new pg.Client({ connectionString: s.url });
        await check.connect();
        try {
          expect((await check.query(`SELECT status FROM runs`)).rows).toEqual([{ status: 'running' }]);
          const next = startWorker(s);
          expect(await next.exited, next.stderr()).toBe(0);
          expect((await check.query(`SELECT status FROM runs ORDER BY id`)).rows.map((r) => r.status)).toEqual(['abandoned', 'completed']);
        } finally {
          await check.end();
        }
      } finally {
        await admin.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`).catch(() => undefined);
        await admin.end();
      }
    });
  }, 120_000);
});
