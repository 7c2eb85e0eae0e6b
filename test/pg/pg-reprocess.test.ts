/**
 * `netingest reprocess` on PostgreSQL: one dataset a real run made (the example jobs against the sandbox), in a
 * SQLite file and copied to PostgreSQL, altered alike on both, reprocessed on both: the same report and the same
 * tables. It holds the dataset lock exclusive (refused while a worker holds it shared) and rebuilds in one
 * transaction (a failure mid-way leaves the old dataset).
 */
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reprocessDatabase, type ReprocessReport } from '../../src/runner/reprocess.ts';
import { NORMALIZED_TABLES } from '../../src/store/ingest/index.ts';
import { decodeRawBody } from '../../src/store/raw-body.ts';
import { holdExclusive, holdShared, lockHolders } from '../../src/store/pg/dataset-lock.ts';
import { STORE_TYPES } from '../../src/store/pg/reader-values.ts';
import { LockedError } from '../../src/store/run-lock.ts';
import { UsageError } from '../../src/errors.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { inProcess, spawnCli } from '../support/run-helpers.ts';
import { makeReadDataset, type ReadDataset } from './read-dataset.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

type Row = Record<string, unknown>;

/** The tables reprocess writes, and the columns left out of the comparison (an id numbered per engine, a "now"). */
const COMPARED: Record<string, string[]> = {
  ...Object.fromEntries(NORMALIZED_TABLES.map((t) => [t, []])),
  answer_anomalies: ['id'],
  tasks: ['updated_at'],
};

/** A row as both engines mean it: JSON text as its value, the rest as STORE_TYPES and better-sqlite3 give it. */
function comparable(row: Row, leftOut: string[]): Row {
  const out: Row = {};
  for (const [column, value] of Object.entries(row)) {
    if (leftOut.includes(column)) continue;
    out[column] = typeof value === 'string' && /^[[{]/.test(value) ? JSON.parse(value) : value;
  }
  return out;
}

/** Rows in one order whichever order the engine returned them in. */
function sorted(rows: Row[]): Row[] {
  const key = (r: Row) => JSON.stringify(r, (_k, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort()) : v));
  return rows.map((r) => [key(r), r] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([, r]) => r);
}

/** Resolves once `check` holds, polling (it asks the server); rejects after 30 s. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (const end = Date.now() + 30_000; !(await check()); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(!pgClusterUrl)(`reprocess on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let data: ReadDataset;
  let lite: BetterSqlite3.Database;
  let pool: pg.Pool;

  const liteTables = () => Object.fromEntries(Object.entries(COMPARED).map(([t, out]) => [t, sorted((lite.prepare(`SELECT * FROM ${t}`).all() as Row[]).map((r) => comparable(r, out)))]));
  async function pgTables(): Promise<Record<string, Row[]>> {
    const tables: Record<string, Row[]> = {};
    for (const [t, out] of Object.entries(COMPARED)) tables[t] = sorted((await pool.query<Row>({ text: `SELECT * FROM ${t}`, types: STORE_TYPES })).rows.map((r) => comparable(r, out)));
    return tables;
  }
  /** The same statement on both engines (`?` parameters, numbered for PostgreSQL). */
  async function onBoth(sql: string, ...params: unknown[]): Promise<void> {
    lite.prepare(sql).run(...params);
    let n = 0;
    await pool.query(sql.replace(/\?/g, () => `$${++n}`), params);
  }
  async function reprocessBoth(): Promise<{ lite: ReprocessReport; pg: ReprocessReport }> {
    // Small pages, so the keyset paging runs many times.
    lite.close();
    const fromLite = await reprocessDatabase(data.file, { batchSize: 7 });
    lite = new BetterSqlite3(data.file);
    return { lite: fromLite, pg: await reprocessDatabase(data.url, { batchSize: 7 }) };
  }

  beforeAll(async () => {
    data = await makeReadDataset('reprocess', ['lookalikes.json', 'job-search.json', 'post-engagement.ts']);
    lite = new BetterSqlite3(data.file);
    pool = new pg.Pool({ connectionString: data.url, max: 3 });
  }, 120_000);
  afterAll(async () => {
    lite?.close();
    await pool?.end();
    await data?.cleanup();
  });

  it('rebuilds the same tables with the same report as SQLite, and recovers a wrong-shape body after a contract fix', async () => {
    const asRun = await pgTables();
    expect(asRun).toEqual(liteTables());
    expect(asRun['posts']!.length).toBeGreaterThan(0);
    expect(asRun['job_search_results']!.length).toBeGreaterThan(0);
    // The latest body of a post task, archived as a wrong-shape answer (its post moved under `data`: no contract reads it).
    const post = lite.prepare(`SELECT r.id, r.task_id AS taskId, r.body, r.body_encoding AS enc FROM raw_responses r
      WHERE r.operation = 'post-details' AND r.id = (SELECT max(id) FROM raw_responses WHERE task_id = r.task_id) ORDER BY r.id LIMIT 1`).get() as { id: number; taskId: number; body: string | Buffer; enc: string | null };
    const original = decodeRawBody(post.body, post.enc);
    await onBoth(`UPDATE raw_responses SET body = ?, body_encoding = NULL, error_code = 'SCHEMA' WHERE id = ?`, `{"data": ${original}}`, post.id);
    await onBoth(`UPDATE tasks SET status = 'failed', last_error_code = 'SCHEMA', last_error = 'wrong shape', retryable = 0, completed_at = NULL WHERE id = ?`, post.taskId);
    // A body of an operation this build does not know, and normalized rows altered by hand.
    await onBoth(`INSERT INTO raw_responses (id, operation, request_key, request_json, body, received_at, run_id, task_id)
      SELECT max(id) + 1, 'no-such-operation', 'k', '{}', '{}', '2026-11-20T10:00:00.000Z', NULL, NULL FROM raw_responses`);
    await onBoth(`UPDATE companies SET name = 'tampered'`);
    await onBoth(`DELETE FROM job_search_results WHERE position < 3`);

    const first = await reprocessBoth();
    expect(first.pg).toEqual(first.lite);
    expect(first.pg).toMatchObject({ invalid: 2, stillRejected: 1, recovered: 0, tasksRecovered: 0, rebuiltFromScratch: true });
    expect(first.pg.replayed).toBe(first.pg.responses - 2);
    const unknownId = lite.prepare(`SELECT id FROM raw_responses WHERE operation = 'no-such-operation'`).pluck().get();
    expect(first.pg.rejected.map((r) => r.id)).toEqual([post.id, unknownId]);
    expect(first.pg.rejected[0]!.reason).toMatch(/^still does not match the spec \(its task stays failed\)/);
    expect(first.pg.rejected[1]!.reason).toBe('unknown operation no-such-operation');
    const afterFirst = await pgTables();
    expect(afterFirst).toEqual(liteTables());
    expect(afterFirst['companies']!.some((c) => c['name'] === 'tampered')).toBe(false);
    expect(afterFirst['tasks']!.find((t) => t['id'] === post.taskId)).toMatchObject({ status: 'failed', last_error_code: 'SCHEMA' });

    // The contract fix (a test cannot make one): the stored body becomes one the contract reads.
    await onBoth(`UPDATE raw_responses SET body = ? WHERE id = ?`, original, post.id);
    const fixed = await reprocessBoth();
    expect(fixed.pg).toEqual(fixed.lite);
    expect(fixed.pg).toMatchObject({ invalid: 1, stillRejected: 0, recovered: 1, tasksRecovered: 1 });
    const afterFix = await pgTables();
    expect(afterFix).toEqual(liteTables());
    const receivedAt = lite.prepare('SELECT received_at FROM raw_responses WHERE id = ?').pluck().get(post.id);
    expect(afterFix['tasks']!.find((t) => t['id'] === post.taskId)).toMatchObject({ status: 'done', last_error_code: null, completed_at: receivedAt });
    expect((await pool.query('SELECT error_code FROM raw_responses WHERE id = $1', [post.id])).rows).toEqual([{ error_code: null }]);
    // Every normalized row is what the run stored, rebuilt from its bodies alone.
    for (const t of NORMALIZED_TABLES) expect(afterFix[t], t).toEqual(asRun[t]);
    await onBoth(`DELETE FROM raw_responses WHERE operation = 'no-such-operation'`);
  }, 60_000);

  it('is refused (exit 4, LockedError) while a worker holds the dataset lock, changing nothing, and names no password', async () => {
    await pool.query(`UPDATE companies SET name = 'tampered' WHERE url = (SELECT min(url) FROM companies)`);
    const worker = await holdShared(pool, 'a worker');
    try {
      await expect(reprocessDatabase(data.url)).rejects.toBeInstanceOf(LockedError);
      const withPassword = new URL(data.url);
      withPassword.password = 's3cret-pw';
      const cli = await inProcess(['reprocess', '--db', withPassword.toString()]);
      expect(cli.code).toBe(EXIT.locked);
      expect(cli.stderr).toMatch(/in use by a running `netingest run` or `netingest reprocess`/);
      expect(cli.stderr).toContain(new URL(data.url).pathname);
      expect(cli.stdout + cli.stderr).not.toContain('s3cret-pw');
      // NETINGEST_DATABASE_URL names it as well as --db.
      expect((await inProcess(['reprocess'], { NETINGEST_DATABASE_URL: data.url })).code).toBe(EXIT.locked);
      expect((await pool.query(`SELECT count(*)::int AS n FROM companies WHERE name = 'tampered'`)).rows[0].n).toBe(1);
    } finally {
      await worker.release();
    }
    const done = await inProcess(['reprocess', '--json'], { NETINGEST_DATABASE_URL: data.url });
    expect(done.code).toBe(EXIT.ok);
    expect(JSON.parse(done.stdout)).toMatchObject({ invalid: 0, rebuiltFromScratch: true });
    expect((await pool.query(`SELECT count(*)::int AS n FROM companies WHERE name = 'tampered'`)).rows[0].n).toBe(0);
    expect(await lockHolders(pool)).toEqual(new Set());
  });

  it('leaves the old dataset whole when it fails mid-way, and lets go of the lock', async () => {
    await pool.query(`UPDATE companies SET name = 'tampered' WHERE url = (SELECT min(url) FROM companies)`);
    const before = await pgTables();
    expect(before['companies']!.length).toBeGreaterThan(0);
    let seenWhenStopped = 0;
    const stop = (seen: number) => {
      // After some pages: the tables were emptied and part of the bodies written again, in the transaction.
      if (seen < 14) return;
      seenWhenStopped = seen;
      throw new Error('stopped mid-way');
    };
    await expect(reprocessDatabase(data.url, { batchSize: 7, onProgress: stop })).rejects.toThrow('stopped mid-way');
    expect(seenWhenStopped).toBe(14);
    expect(await pgTables()).toEqual(before);
    expect(await lockHolders(pool)).toEqual(new Set());
    await (await holdExclusive(pool, 'the dataset', 'netingest reprocess')).release();
  });

  it('leaves the old dataset whole when killed mid-way (SIGKILL), and the server lets go of its lock', async () => {
    await pool.query(`UPDATE companies SET name = 'tampered' WHERE url = (SELECT min(url) FROM companies)`);
    const before = await pgTables();
    expect(before['jobs']!.length).toBeGreaterThan(0);
    // A row of jobs held by the test: the rebuild, having emptied the tables before jobs, waits there to be killed.
    const blocker = await pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM jobs ORDER BY url LIMIT 1 FOR UPDATE');
      const cli = spawnCli(['reprocess', '--db', data.url], { cwd: data.ws.dir });
      const waiting = async () => (await pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'netingest' AND wait_event_type = 'Lock'`)).rows[0].n > 0;
      await until(waiting, 'reprocess to wait on the held row');
      cli.child.kill('SIGKILL');
      expect((await cli.done).signal).toBe('SIGKILL');
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    await until(async () => (await lockHolders(pool)).size === 0, 'the killed session to end');
    expect(await pgTables()).toEqual(before);
  });

  it('skips a body the server refuses, alone, and keeps the rest of the rebuild', async () => {
    const { rows } = await pool.query<{ id: string; url: string }>(`SELECT id, request_key AS url FROM raw_responses WHERE operation = 'post-details' ORDER BY id LIMIT 1`);
    const postId = (await pool.query(`SELECT post_id FROM posts WHERE url = $1`, [rows[0]!.url])).rows[0]?.post_id as string;
    expect(postId).toBeTruthy();
    // A constraint the server checks, not the code: only a savepoint per body keeps the transaction going past it.
    await pool.query(`ALTER TABLE posts ADD CONSTRAINT test_refused CHECK (post_id <> '${postId}') NOT VALID`);
    try {
      const report = await reprocessDatabase(data.url);
      expect(report).toMatchObject({ invalid: 1, replayed: report.responses - 1 });
      expect(report.rejected).toEqual([expect.objectContaining({ id: Number(rows[0]!.id), reason: expect.stringMatching(/test_refused/) })]);
      expect((await pool.query('SELECT count(*)::int AS n FROM posts')).rows[0].n).toBeGreaterThan(0);
    } finally {
      await pool.query('ALTER TABLE posts DROP CONSTRAINT test_refused');
    }
    expect((await reprocessDatabase(data.url)).invalid).toBe(0);
  });

  it('after a prune (raw_pruned_at), replays the kept bodies over the tables as SQLite does, keeping the rows of a dropped body', async () => {
    const dropped = lite.prepare(`SELECT id, request_key AS url FROM raw_responses WHERE operation = 'post-details' ORDER BY id LIMIT 1`).get() as { id: number; url: string };
    await onBoth(`DELETE FROM raw_responses WHERE id = ?`, dropped.id);
    await onBoth(`INSERT INTO netingest_meta (key, value) VALUES ('raw_pruned_at', '2026-11-25T10:00:00.000Z')`);
    await onBoth(`UPDATE companies SET name = 'tampered'`);
    const both = await reprocessBoth();
    expect(both.pg).toEqual(both.lite);
    expect(both.pg).toMatchObject({ rebuiltFromScratch: false, rowsDeleted: 0, invalid: 0 });
    const tables = await pgTables();
    expect(tables).toEqual(liteTables());
    expect(tables['posts']!.some((p) => p['url'] === dropped.url)).toBe(true);
    expect(tables['companies']!.some((c) => c['name'] === 'tampered')).toBe(false);
  });

  it('refuses a database that holds no dataset, creating nothing there', async () => {
    const empty = await newPgDatabase('reprocess_empty');
    const err = await reprocessDatabase(empty).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect(String((err as Error).message)).toMatch(/no netingest dataset in postgres:\/\/.*: nothing to reprocess/);
    const check = new pg.Client({ connectionString: empty });
    await check.connect();
    try {
      expect((await check.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'`)).rows[0].n).toBe(0);
    } finally {
      await check.end();
    }
  });
});
