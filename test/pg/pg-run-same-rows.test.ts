/**
 * `run` on PostgreSQL stores what it stores on SQLite: the same jobs (all three operations, paged) against one
 * sandbox each, one run per engine, then every normalized table compared: its row count and its rows' values.
 * Then one group of outcomes whose answers touch the same rows (a refresh within a group), filed by each
 * engine's group commit: both end with the same rows, every column.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import type { Job } from '../../src/jobs/schema.ts';
import type { RunSummary } from '../../src/runner/run-jobs.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { NORMALIZED_TABLES } from '../../src/store/ingest/index.ts';
import { FAST_RATE, FAST_RETRY, companyUrls, csv, makeWorkspace, operationRequests, postUrls, query, type Workspace } from '../support/run-helpers.ts';
import { newMigratedPgDatabase, newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { openDatabase } from '../../src/store/open.ts';
import { createOutcomeApplier } from '../support/store-helpers.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { createPgGroupCommit } from '../../src/store/pg/pg-group-commit.ts';
import { withPgClient } from '../../src/store/pg/transaction.ts';
import { writeAsRunWriter } from './run-writer-group.ts';
import { oneGroupTouchingSameRows, GROUP_TASKS, GROUP_TIMES } from './same-row-group.ts';

const TOKEN = 'pg-same-rows-7c1e';
let sqliteBox: Sandbox;
let pgBox: Sandbox;
let ws: Workspace;
let url: string;
let client: pg.Client;
let lite: RunSummary;
let onPg: RunSummary;

/** The key each table's rows are sorted by on both engines. */
const KEY_COLUMNS: Record<string, string> = {
  companies: 'url', company_locations: 'company_url, position', company_industries: 'company_url, position',
  company_specialities: 'company_url, position', company_hashtags: 'company_url, position',
  similar_companies: 'reference_url, filter_key, company_url', posts: 'post_id', post_media: 'post_id, position',
  jobs: 'url', job_searches: 'search_key', job_search_results: 'search_key, job_url',
};
/** Columns compared value for value (times differ between the two runs; the rest must not). */
const VALUE_COLUMNS: Record<string, string> = {
  companies: 'url, name, followers, staff_total', similar_companies: 'reference_url, company_url, rank, page',
  posts: 'post_id, url, posted_on, hashtags', post_media: 'post_id, position, url', jobs: 'url, title', job_search_results: 'search_key, job_url, position',
};

describe.skipIf(!pgClusterUrl)(`run on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  beforeAll(async () => {
    sqliteBox = await startSandbox({ port: 0, tokens: { [TOKEN]: 10_000 }, notFoundRate: 0 });
    pgBox = await startSandbox({ port: 0, tokens: { [TOKEN]: 10_000 }, notFoundRate: 0 });
    ws = await makeWorkspace();
    await ws.write('leads.csv', csv(['company_url'], companyUrls(3).map((u) => [u])));
    await ws.write('posts.csv', csv(['post_url'], postUrls(12).map((u) => [u])));
    await ws.write('queries.csv', 'keywords,location\nrobotics engineer,\ndata analyst,france\n');
    const files = [
      await ws.job('lookalikes', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, request: { num: 5 }, pages: 2, rate: FAST_RATE, retry: FAST_RETRY }),
      await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY }),
      await ws.job('searches', { operation: 'search-jobs', input: { csv: 'queries.csv' }, request: { timePosted: 'past_week' }, pages: 2, rate: FAST_RATE, retry: FAST_RETRY }),
    ];
    const jobs: Job[] = await ws.load(...files);
    url = await newPgDatabase('run-rows');
    lite = await runJobs({ dbPath: ws.db, jobs, api: { baseUrl: sqliteBox.url, token: TOKEN }, requestTimeoutMs: 5000 });
    onPg = await runJobs({ dbPath: url, jobs, api: { baseUrl: pgBox.url, token: TOKEN }, requestTimeoutMs: 5000 });
    client = new pg.Client({ connectionString: url });
    await client.connect();
  }, 60_000);
  afterAll(async () => {
    await client?.end();
    await sqliteBox?.stop();
    await pgBox?.stop();
    await ws?.cleanup();
  });

  it('makes the same calls and gives the same summary', () => {
    expect(onPg.status).toBe('completed');
    expect(operationRequests(pgBox).length).toBe(operationRequests(sqliteBox).length);
    expect(operationRequests(pgBox).length).toBeGreaterThan(20);
    const shape = (s: RunSummary) => s.jobs.map((j) => ({ ...j, durationMs: undefined }));
    expect(shape(onPg)).toEqual(shape(lite));
    expect(onPg.calls).toBe(lite.calls);
    expect(onPg.creditsSpent).toBe(lite.creditsSpent);
  });

  it('stores the same rows in every normalized table, and the same bookkeeping', async () => {
    for (const table of [...NORMALIZED_TABLES, 'tasks', 'raw_responses', 'api_calls', 'runs']) {
      const n = query<{ n: number }>(ws, `SELECT count(*) AS n FROM ${table}`)[0]!.n;
      const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
      expect(rows[0]!.n, table).toBe(n);
    }
    expect(query<{ n: number }>(ws, 'SELECT count(*) AS n FROM posts')[0]!.n).toBe(12);
    for (const [table, columns] of Object.entries(VALUE_COLUMNS)) {
      const order = KEY_COLUMNS[table]!;
      const fromLite = query(ws, `SELECT ${columns} FROM ${table} ORDER BY ${order}`);
      const fromPg = (await client.query(`SELECT ${columns} FROM ${table} ORDER BY ${order}`)).rows;
      // JSON columns come back parsed from jsonb: compare them parsed on both sides.
      const norm = (rows: Array<Record<string, unknown>>) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^[[{]/.test(v) ? JSON.parse(v) : v])));
      expect(norm(fromPg), table).toEqual(norm(fromLite as Array<Record<string, unknown>>));
      expect(fromLite.length, table).toBeGreaterThan(0);
    }
    const { rows: bodies } = await client.query(`SELECT count(*)::int AS n FROM raw_responses WHERE body_encoding IS NOT NULL OR body IS NULL`);
    expect(bodies[0].n).toBe(0);
  });

  it('a second run on PostgreSQL calls nothing: every task is fresh', async () => {
    const before = operationRequests(pgBox).length;
    const jobs = await ws.load(...['lookalikes', 'posts', 'searches'].map((n) => `${n}.json`));
    const again = await runJobs({ dbPath: url, jobs, api: { baseUrl: pgBox.url, token: TOKEN }, requestTimeoutMs: 5000 });
    expect(again.status).toBe('completed');
    expect(operationRequests(pgBox).length).toBe(before);
    expect(again.jobs.every((j) => j.fresh > 0)).toBe(true);
  });
});

describe.skipIf(!pgClusterUrl)(`one group whose answers touch the same rows${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let gws: Workspace;
  let gclient: pg.Client;
  const TABLES = [...NORMALIZED_TABLES, 'tasks', 'raw_responses', 'api_calls', 'answer_anomalies'];
  /** Every column but the ids of tables keyed by an id of their own (the same rows get the same ids anyway). */
  const ORDER: Record<string, string> = { ...KEY_COLUMNS, tasks: 'id', raw_responses: 'id', api_calls: 'id', answer_anomalies: 'id' };

  beforeAll(async () => {
    gws = await makeWorkspace();
    const groupUrl = await newMigratedPgDatabase('group-rows');
    const database = openDatabase(gws.db);
    const store = await openPgStore(groupUrl);
    try {
      const insertTask = 'INSERT INTO tasks (id, job, operation, input_key, page, request_json, status, attempts, created_at, updated_at) VALUES ';
      const taskRows = GROUP_TASKS.map((t) => [t.id, t.job, t.operation, t.inputKey, t.page, JSON.stringify(t.request), 'pending', 0, GROUP_TIMES.planned, GROUP_TIMES.planned]);
      for (const row of taskRows) database.sqlite.prepare(`${insertTask}(${row.map(() => '?').join(', ')})`).run(...row);
      for (const row of taskRows) await store.pool.query(`${insertTask}(${row.map((_, i) => `$${i + 1}`).join(', ')})`, row);
      const ops = oneGroupTouchingSameRows();
      createOutcomeApplier(database, 7)(ops);
      await withPgClient(store.pool, (client) => writeAsRunWriter(createPgGroupCommit(7), client, ops));
    } finally {
      database.close();
      await store.close();
    }
    gclient = new pg.Client({ connectionString: groupUrl });
    await gclient.connect();
  }, 60_000);
  afterAll(async () => {
    await gclient?.end();
    await gws?.cleanup();
  });

  /** A value as both engines give it: times as ISO instants, JSON parsed, numbers as numbers, booleans as 0/1. */
  const norm = (v: unknown): unknown => {
    if (v instanceof Date) return v.toISOString();
    if (typeof v === 'boolean') return v ? 1 : 0;
    if (Buffer.isBuffer(v)) return norm(v.toString('utf8'));
    if (typeof v !== 'string') return v;
    if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/.test(v)) return new Date(v).toISOString();
    if (/^-?\d+(\.\d+)?$/.test(v)) return Number(v);
    if (/^[[{"]/.test(v)) return JSON.parse(v);
    return v;
  };
  const normRows = (rows: Array<Record<string, unknown>>) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, norm(v)])));
  const pgRows = async (sql: string) => normRows((await gclient.query(sql)).rows);
  const liteRows = (sql: string) => normRows(query(gws, sql));

  it('stores the same rows on both engines, every column of every table the group writes', async () => {
    for (const table of TABLES) {
      const sql = `SELECT * FROM ${table} ORDER BY ${ORDER[table]}`;
      // Bodies are compared apart: SQLite may store them gzipped.
      const lite = liteRows(sql).map((r) => ({ ...r, body_encoding: undefined, body: undefined }));
      const onPg = (await pgRows(sql)).map((r) => ({ ...r, body_encoding: undefined, body: undefined }));
      expect(onPg, table).toEqual(lite);
    }
    expect(liteRows('SELECT count(*) AS n FROM posts')[0]!['n']).toBe(3);
    const bodies = (await gclient.query('SELECT body FROM raw_responses ORDER BY id')).rows.map((r) => r.body);
    expect(bodies).toEqual(oneGroupTouchingSameRows().flatMap((op) => ('body' in op ? [op.body] : [])));
  });

  it('the later answer wins each row, first/last seen merge, and a read-back sees the answer before it', async () => {
    const acme1 = (await pgRows(`SELECT followers, first_seen_at, updated_at FROM companies WHERE url = 'https://www.network.com/company/acme-1'`))[0]!;
    expect(acme1).toEqual({ followers: 200, first_seen_at: GROUP_TIMES.early, updated_at: GROUP_TIMES.late });
    expect(await pgRows(`SELECT city FROM company_locations WHERE company_url = 'https://www.network.com/company/acme-1' ORDER BY position`)).toEqual([{ city: 'lyon' }]);
    expect(await pgRows(`SELECT url FROM post_media WHERE post_id = 'activity-7123456789012345678' ORDER BY position`)).toEqual([{ url: 'https://img.example/c.jpg' }]);
    expect(await pgRows(`SELECT posted_on FROM posts WHERE post_id = 'activity-7000000000000000001'`)).toEqual([{ posted_on: '2026-04-03' }]);
    expect(await pgRows(`SELECT title FROM jobs WHERE url LIKE '%3800000001'`)).toEqual([{ title: 'Refreshed title' }]);
    expect(await pgRows(`SELECT kind FROM answer_anomalies WHERE task_id = 7`)).toEqual([{ kind: 'other_post' }]);
    expect(await pgRows(`SELECT status, attempts FROM tasks WHERE id = 9`)).toEqual([{ status: 'done', attempts: 3 }]);
  });
});
