/**
 * `run` on PostgreSQL stores what it stores on SQLite: the same jobs (all three operations, paged) against one
 * sandbox each, one run per engine, then every normalized table compared: its row count and its rows' values.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startSandbox, type Sandbox } from '../src/sandbox/server.ts';
import type { Job } from '../src/jobs/schema.ts';
import type { RunSummary } from '../src/runner/run-jobs.ts';
import { runJobs } from '../src/runner/run-jobs.ts';
import { NORMALIZED_TABLES } from '../src/store/ingest/index.ts';
import { FAST_RATE, FAST_RETRY, companyUrls, csv, makeWorkspace, operationRequests, postUrls, query, type Workspace } from './run-helpers.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './pg/use-pg.ts';

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
