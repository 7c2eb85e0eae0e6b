/**
 * `netingest copy`: a dataset a real run made (sandbox answers, gzip raw bodies, invalid rows, calls) moves to
 * PostgreSQL table by table with the same rows and values; a second copy into it, and a copy that fails
 * half-way, change nothing.
 */
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { loadJob } from '../../src/jobs/load.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { COPY_ORDER, copyDataset } from '../../src/store/copy-dataset.ts';
import { decodeRawBody, registerRawBodyFunction } from '../../src/store/raw-body.ts';
import { FAST_RATE, FAST_RETRY, ROOT, inProcess, makeWorkspace, run, type Workspace } from '../support/run-helpers.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { cuttableProxy } from './cuttable-proxy.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { holdShared } from '../../src/store/pg/dataset-lock.ts';

const TOKEN = 'copy-token-5d1e';
const TABLES = COPY_ORDER.map((t) => t.name);

/** A value as both engines mean it: timestamps as ISO text, JSON as its value, bigint as a number. */
function comparable(value: unknown, pgType: string | null, liteColumn?: { table: string; column: string; row: Record<string, unknown> }): unknown {
  if (value === null || value === undefined) return null;
  if (liteColumn?.table === 'raw_responses' && liteColumn.column === 'body') return decodeRawBody(value, liteColumn.row.body_encoding);
  if (liteColumn?.table === 'raw_responses' && liteColumn.column === 'body_encoding') return null;
  if (value instanceof Date) return value.toISOString();
  if (pgType === 'bigint' && typeof value === 'string') return Number(value);
  if (pgType === 'jsonb' && liteColumn) return typeof value === 'string' && !isAsGiven(liteColumn.table, liteColumn.column) ? JSON.parse(value) : value;
  return value;
}
const isAsGiven = (table: string, column: string) =>
  ['companies.followers', 'companies.cover', 'companies.tagline', 'company_locations.is_primary', 'company_locations.line2'].includes(`${table}.${column}`);

describe.skipIf(!pgClusterUrl)(`netingest copy${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let sandbox: Sandbox;
  let ws: Workspace;
  let target: string;
  let client: pg.Client;
  let lite: BetterSqlite3.Database;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 100_000 } });
    ws = await makeWorkspace();
    // The example jobs (lookalikes, job search, posts) as `netingest demo` runs them, only faster.
    const jobs = await Promise.all(['lookalikes.json', 'job-search.json', 'post-engagement.ts'].map((f) => loadJob(join(ROOT, 'jobs', f), { cwd: ROOT })));
    const summary = await run(ws, sandbox, TOKEN, jobs.map((j) => ({ ...j, rate: FAST_RATE, retry: { ...j.retry, ...FAST_RETRY } })));
    expect(summary.calls).toBeGreaterThan(20);
    lite = new BetterSqlite3(ws.db);
    registerRawBodyFunction(lite);
    // Tables a clean sandbox run may leave empty get a row each, so every table's copy is checked.
    lite.prepare(`INSERT INTO answer_anomalies (raw_response_id, run_id, task_id, operation, request_key, kind, position, path, reason, at)
      VALUES (1, 1, 1, 'similar-companies', 'k', 'no_identity', 3, 'data.content[2]', 'no url', '2026-11-25T10:00:00.000Z')`).run();
    lite.prepare(`INSERT OR IGNORE INTO answer_drift (run_id, operation, path, kind, count, seen, detail) VALUES (1, 'post-details', 'post.hashtags', 'null', 2, 7, NULL)`).run();
    lite.prepare(`INSERT INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at, lease_ms) VALUES (1, 999999, 'gone-host', 1, '2026-11-25T10:00:00.000Z', '2026-11-25T10:00:00.000Z', 300000)`).run();
    target = await newPgDatabase('copy');
    client = new pg.Client({ connectionString: target });
    await client.connect();
  }, 120_000);
  afterAll(async () => {
    await client?.end();
    lite?.close();
    await sandbox?.stop();
    await ws?.cleanup();
  });

  it('moves every table with the same rows and values, and numbers new rows past the copied ids', async () => {
    expect(lite.prepare("SELECT count(*) FROM raw_responses WHERE body_encoding = 'gzip'").pluck().get()).toBeGreaterThan(0);
    expect(lite.prepare('SELECT count(*) FROM invalid_inputs').pluck().get()).toBeGreaterThan(0);
    const cli = await inProcess(['copy', '--from', ws.db, '--to', target]);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(/^Copied \d+ rows from .* to postgres:\/\/netingest@127\.0\.0\.1:\d+\/copy_/);

    const types = new Map((await client.query<{ k: string; t: string }>("SELECT table_name || '.' || column_name AS k, data_type AS t FROM information_schema.columns WHERE table_schema = 'public'")).rows.map((r) => [r.k, r.t]));
    for (const table of TABLES) {
      const skipMeta = table === 'netingest_meta' ? " WHERE key <> 'schema_version'" : '';
      const liteCount = lite.prepare(`SELECT count(*) FROM "${table}"${skipMeta}`).pluck().get() as number;
      const pgCount = Number((await client.query(`SELECT count(*) AS n FROM "${table}"${skipMeta}`)).rows[0].n);
      expect({ table, rows: pgCount }).toEqual({ table, rows: liteCount });
      expect(liteCount, table).toBeGreaterThan(0);
      // A sample: the first, the last and some rows between, by primary key.
      const key = (lite.prepare(`PRAGMA table_info("${table}")`).all() as Array<{ name: string; pk: number }>).filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name);
      const liteRows = lite.prepare(`SELECT * FROM "${table}"${skipMeta} ORDER BY ${key.map((k) => `"${k}"`).join(', ')}`).all() as Array<Record<string, unknown>>;
      const sample = liteRows.filter((_, i) => i === 0 || i === liteRows.length - 1 || i % 7 === 3);
      for (const row of sample) {
        const where = key.map((k, i) => `"${k}" = $${i + 1}`).join(' AND ');
        const pgRow = (await client.query(`SELECT * FROM "${table}" WHERE ${where}`, key.map((k) => row[k]))).rows[0] as Record<string, unknown>;
        expect(pgRow, `${table} ${JSON.stringify(key.map((k) => row[k]))}`).toBeDefined();
        for (const [column, value] of Object.entries(row)) {
          const pgType = types.get(`${table}.${column}`) ?? null;
          expect({ table, column, value: comparable(pgRow[column], pgType) }).toEqual({ table, column, value: comparable(value, pgType, { table, column, row }) });
        }
      }
    }
    // Every raw body reads the same through raw_body() on both engines.
    const liteBodies = lite.prepare('SELECT id, raw_body(body, body_encoding) AS text FROM raw_responses ORDER BY id').all();
    const pgBodies = (await client.query('SELECT id::int AS id, raw_body(body, body_encoding) AS text FROM raw_responses ORDER BY id')).rows;
    expect(pgBodies).toEqual(liteBodies);

    // The lock of a dead run was taken over for the copy and released; the new dataset has no run going on.
    expect(lite.prepare('SELECT count(*) FROM run_lock').pluck().get()).toBe(0);
    expect(Number((await client.query('SELECT count(*) AS n FROM run_lock')).rows[0].n)).toBe(0);

    const maxRun = lite.prepare('SELECT max(id) FROM runs').pluck().get() as number;
    const inserted = await client.query("INSERT INTO runs (jobs, started_at, status) VALUES ('[]', now(), 'running') RETURNING id");
    expect(Number(inserted.rows[0].id)).toBe(maxRun + 1);
    await client.query('DELETE FROM runs WHERE id = $1', [inserted.rows[0].id]);
  });

  it('refuses a second copy into the same database, changing nothing (exit 2)', async () => {
    const before = Number((await client.query('SELECT count(*) AS n FROM tasks')).rows[0].n);
    expect(before).toBeGreaterThan(0);
    const cli = await inProcess(['copy', '--from', ws.db, '--to', target]);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toMatch(/already holds data \(in companies, .*tasks.*\): netingest copy only fills an empty database/);
    expect(Number((await client.query('SELECT count(*) AS n FROM tasks')).rows[0].n)).toBe(before);
    // Without --to, NETINGEST_DATABASE_URL names the target: the same database, the same refusal.
    const fromEnv = await inProcess(['copy', '--from', ws.db], { NETINGEST_DATABASE_URL: target });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toMatch(/already holds data/);
  });

  it('leaves the target empty when a row fails half-way (one transaction)', async () => {
    const broken = join(ws.dir, 'broken.db');
    lite.exec(`VACUUM INTO '${broken}'`);
    const damaged = new BetterSqlite3(broken);
    // The last raw body's request is no JSON: its INSERT fails after every other table went in.
    damaged.prepare("UPDATE raw_responses SET request_json = '{not json' WHERE id = (SELECT max(id) FROM raw_responses)").run();
    damaged.close();
    const empty = await newPgDatabase('copy_fail');
    const cli = await inProcess(['copy', '--from', broken, '--to', empty]);
    expect(cli.code).toBe(1);
    // The source's data, not a fault of netingest's: no "unexpected error".
    expect(cli.stderr).toMatch(/^netingest: copying raw_responses .*invalid input syntax for type json.*\[DB_WRITE_FAILED\]/);
    const check = new pg.Client({ connectionString: empty });
    await check.connect();
    try {
      for (const table of ['companies', 'tasks', 'runs', 'api_calls', 'raw_responses']) {
        expect({ table, n: Number((await check.query(`SELECT count(*) AS n FROM "${table}"`)).rows[0].n) }).toEqual({ table, n: 0 });
      }
    } finally {
      await check.end();
    }
  });

  it('stops saying the connection was lost when the target server goes away mid-copy (exit 1), no stack trace', async () => {
    const proxy = await cuttableProxy(await newPgDatabase('copy_cut'));
    // Cut as the first task rows go to the server: the copy has opened the target and written the tables before.
    const cut = proxy.cutOnSight('INSERT INTO "tasks"');
    const cli = await inProcess(['copy', '--from', ws.db, '--to', proxy.url]);
    await cut;
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/lost the connection to database postgres:\/\/[^ ]+ \(.*\): the server ended the session \(a restart, a stop, pg_terminate_backend\) or cannot be reached.*\[DB_CONNECTION_LOST\]/);
    expect(cli.stderr).not.toMatch(/^\s+at /m);
  });

  it('gives the same rows in many small batches (rows and bytes per INSERT capped)', async () => {
    const small = await newPgDatabase('copy_batches');
    const report = await copyDataset(ws.db, small, { batchRows: 7, batchBytes: 10_000 });
    expect(report.tables.map((t) => t.table)).toEqual(TABLES);
    const check = new pg.Client({ connectionString: small });
    await check.connect();
    try {
      for (const { table, rows } of report.tables) {
        const skipMeta = table === 'netingest_meta' ? " WHERE key <> 'schema_version'" : '';
        expect(rows, table).toBe(lite.prepare(`SELECT count(*) FROM "${table}"${skipMeta}`).pluck().get());
        expect(Number((await check.query(`SELECT count(*) AS n FROM "${table}"${skipMeta}`)).rows[0].n), table).toBe(rows);
      }
      expect(report.tables.find((t) => t.table === 'tasks')!.rows).toBeGreaterThan(7);
      const ids = (await check.query('SELECT id::int FROM raw_responses ORDER BY id')).rows.map((r) => r.id);
      expect(ids).toEqual(lite.prepare('SELECT id FROM raw_responses ORDER BY id').pluck().all());
    } finally {
      await check.end();
    }
  });

  it('refuses a source a live run is writing to (exit 4): what it pays for would be left out', async () => {
    const now = new Date().toISOString();
    lite.prepare(`INSERT OR REPLACE INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at, lease_ms) VALUES (1, 4242, 'other-host', 7, ?, ?, 300000)`).run(now, now);
    try {
      const empty = await newPgDatabase('copy_locked');
      const cli = await inProcess(['copy', '--from', ws.db, '--to', empty]);
      expect(cli.code).toBe(4);
      expect(cli.stderr).toMatch(/in use by run 7 \(pid 4242 on other-host/);
    } finally {
      lite.prepare('DELETE FROM run_lock').run();
    }
  });

  it('refuses a target a worker is running on (exit 4), and holds it from workers while it copies', async () => {
    const empty = await newPgDatabase('copy_target_in_use');
    const store = await openPgStore(empty);
    try {
      // A worker on the target holds the dataset lock shared: what the copy brings, it would pay for again.
      const worker = await holdShared(store.pool, 'the dataset');
      const refused = await inProcess(['copy', '--from', ws.db, '--to', empty]);
      await worker.release();
      expect(refused.code).toBe(4);
      expect(refused.stderr).toMatch(/is in use by a running `netingest run` or `netingest copy`/);
      // While the copy holds it (stopped before its first task rows), a worker is refused; then the copy goes on.
      const proxy = await cuttableProxy(empty);
      const paused = proxy.pauseOnSight('INSERT INTO "tasks"');
      const copying = inProcess(['copy', '--from', ws.db, '--to', proxy.url]);
      const resume = await paused;
      await expect(holdShared(store.pool, 'the dataset')).rejects.toThrow(/being rewritten by .*`netingest copy`/);
      resume();
      expect((await copying).code).toBe(0);
      await (await holdShared(store.pool, 'the dataset')).release();
    } finally {
      await store.close();
    }
  });

  it('says what is wrong with --from and --to (exit 2)', async () => {
    expect(await inProcess(['copy', '--from', join(ws.dir, 'nope.db'), '--to', target])).toMatchObject({ code: 2, stderr: expect.stringMatching(/no database at .*nope\.db/) });
    expect(await inProcess(['copy', '--from', ws.db, '--to', 'other.db'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/give a postgres:\/\/ URL/) });
  });
});
