/**
 * Retention of raw bodies on both engines: a job's keepRawDays prunes its own bodies at the end of a run (one
 * test, run on each); on PostgreSQL `netingest prune` keeps the same bodies as on SQLite from the same archive
 * (one rule, two engines), a dry run changes nothing, and a running worker's shared hold refuses it (exit 4).
 * SQLite's own cases (gzip, reprocess after a prune, the command's text) are test/e2e/db-raw-retention.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { openDatabase } from '../../src/store/open.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { holdShared } from '../../src/store/pg/dataset-lock.ts';
import { pruneRawBodiesPg, rawBodiesWerePrunedPg } from '../../src/store/pg/raw-prune.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { csv, FAST_RATE, FAST_RETRY, inProcess, makeWorkspace, postUrls, query, ROOT, type Workspace } from '../support/run-helpers.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';
import { newMigratedPgDatabase, newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'pg-retention-3e9a';
const DAY = 86_400_000;
const NOW = Date.now();
const daysAgo = (d: number) => new Date(NOW - d * DAY).toISOString();

/** One stored answer: its lookup, when it came, whether it was accepted; `label` is its body, to tell them apart. */
interface Body { label: string; operation: string; key: string; days: number; errorCode?: string }

/** Every case of the rule (see store/raw-prune.ts), as the SQLite test has them, plus two. */
const ARCHIVE: Body[] = [
  { label: 'oldA', operation: 'search-jobs', key: 'a', days: 40 },
  { label: 'oldWrongA', operation: 'search-jobs', key: 'a', days: 35, errorCode: 'SCHEMA' },
  { label: 'recentA', operation: 'search-jobs', key: 'a', days: 10 },
  { label: 'latestA', operation: 'search-jobs', key: 'a', days: 1 },
  { label: 'onlyB', operation: 'search-jobs', key: 'b', days: 60 },
  { label: 'wrongC', operation: 'search-jobs', key: 'c', days: 50, errorCode: 'SCHEMA' },
  { label: 'oldD', operation: 'post-details', key: 'd', days: 45 },
  { label: 'latestD', operation: 'post-details', key: 'd', days: 31 },
  // The same request key under another operation answers another request.
  { label: 'otherOpD', operation: 'company-details', key: 'd', days: 90 },
];

const bodyOf = (b: Body) => JSON.stringify({ label: b.label, pad: 'x'.repeat(40) });
const labels = (bodies: string[]) => bodies.map((b) => (JSON.parse(b) as { label: string }).label).sort();

const sandboxes = useSandboxes();
let ws: Workspace;
const pools: pg.Pool[] = [];

async function pgDataset(prefix: string): Promise<{ url: string; pool: pg.Pool }> {
  const url = await newMigratedPgDatabase(prefix);
  const store = await openPgStore(url);
  await store.close();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pools.push(pool);
  return { url, pool };
}

async function pgBodies(pool: pg.Pool): Promise<string[]> {
  return (await pool.query<{ body: string }>('SELECT body FROM raw_responses ORDER BY id')).rows.map((r) => r.body);
}

const sqliteBodies = () => query<{ body: string }>(ws, 'SELECT body FROM raw_responses ORDER BY id').map((r) => r.body);

describe.skipIf(!pgClusterUrl)(`raw body retention on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  beforeAll(async () => {
    ws = await makeWorkspace();
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await ws?.cleanup();
  });

  it('netingest prune keeps the same bodies as on SQLite, a dry run changes nothing, a running worker refuses it', async () => {
    const { url, pool } = await pgDataset('raw_retention');
    const lite = openDatabase(ws.db);
    try {
      const insert = lite.sqlite.prepare(`INSERT INTO raw_responses (operation, request_key, request_json, body, received_at, error_code) VALUES (?, ?, '{}', ?, ?, ?)`);
      for (const b of ARCHIVE) insert.run(b.operation, b.key, bodyOf(b), daysAgo(b.days), b.errorCode ?? null);
    } finally {
      lite.close();
    }
    for (const b of ARCHIVE) {
      await pool.query(`INSERT INTO raw_responses (operation, request_key, request_json, body, received_at, error_code) VALUES ($1, $2, '{}', $3, $4, $5)`,
        [b.operation, b.key, bodyOf(b), daysAgo(b.days), b.errorCode ?? null]);
    }
    const prune = async (db: string, ...flags: string[]) => {
      const out = await inProcess(['prune', '--db', db, '--keep-days', '30', '--json', ...flags]);
      expect(out.code, out.stderr).toBe(0);
      return JSON.parse(out.stdout) as Record<string, number>;
    };
    const rule = (r: Record<string, number>) => ({ dropped: r.dropped, kept: r.kept, compressed: r.compressed, compressedSavedBytes: r.compressedSavedBytes });

    const dryLite = await prune(ws.db, '--dry-run');
    const dryPg = await prune(url, '--dry-run');
    expect(rule(dryPg)).toEqual(rule(dryLite));
    expect(dryPg.dropped).toBeGreaterThan(0);
    expect(await pgBodies(pool)).toEqual(ARCHIVE.map(bodyOf));
    expect(await rawBodiesWerePrunedPg(pool)).toBe(false);

    // A worker holds the dataset shared while it runs: prune waits for no one.
    const worker = await holdShared(pool, 'the dataset');
    try {
      const refused = await inProcess(['prune', '--db', url, '--keep-days', '30']);
      expect(refused.code).toBe(4);
      expect(refused.stderr).toMatch(/in use by a running `netingest run`.*netingest prune waits for no one/);
      expect(await pgBodies(pool)).toEqual(ARCHIVE.map(bodyOf));
    } finally {
      await worker.release();
    }

    const doneLite = await prune(ws.db);
    const donePg = await prune(url);
    expect(rule(donePg)).toEqual(rule(dryLite));
    expect(labels(await pgBodies(pool))).toEqual(labels(sqliteBodies()));
    expect(labels(await pgBodies(pool))).toEqual(['latestA', 'latestD', 'onlyB', 'otherOpD', 'recentA', 'wrongC']);
    // Stored sizes: the same text, plus PostgreSQL's few bytes of header per value.
    expect(donePg.droppedBytes).toBeGreaterThanOrEqual(doneLite.droppedBytes!);
    expect(donePg.droppedBytes).toBeLessThanOrEqual(doneLite.droppedBytes! + 4 * donePg.dropped!);
    expect(await rawBodiesWerePrunedPg(pool)).toBe(true);
    // The figures say what they measure: the table on the server, not a file; and the plain VACUUM ran.
    expect(donePg).not.toHaveProperty('fileBytesAfter');
    expect(donePg.rawResponsesBytesAfter).toBeGreaterThan(0);
    expect(donePg.vacuumed).toBe(true);
    const { rows } = await pool.query(`SELECT last_vacuum FROM pg_stat_user_tables WHERE relname = 'raw_responses'`);
    expect(rows[0].last_vacuum).not.toBeNull();

    const text = await inProcess(['prune', '--db', url, '--keep-days', '0']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^1 raw bodies received before \S+ and superseded by a newer answer dropped \(\d+\.\d MB\); 5 kept\.$/m);
    expect(text.stdout).toMatch(/raw_responses on the server \(table, TOAST and indexes\): \d+\.\d MB before, \d+\.\d MB after VACUUM/);
  });

  it('refuses a database with no netingest schema and leaves it empty, as SQLite refuses a missing file', async () => {
    const url = await newPgDatabase('raw_retention_empty');
    const out = await inProcess(['prune', '--db', url, '--dry-run']);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/no netingest dataset in postgres:\/\/\S+: nothing to prune/);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      expect((await client.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'`)).rows[0].n).toBe(0);
    } finally {
      await client.end();
    }
  });

  it('drops nothing that a body still being written would supersede, and two prunes at once keep the latest answer', async () => {
    const { url, pool } = await pgDataset('raw_retention_race');
    const insert = `INSERT INTO raw_responses (operation, request_key, request_json, body, received_at) VALUES ('search-jobs', $1, '{}', $2, $3)`;
    for (const [key, label, days] of [['b', 'onlyB', 60], ['e', 'oldE', 50], ['e', 'latestE', 40]] as const) {
      await pool.query(insert, [key, JSON.stringify({ label }), daysAgo(days)]);
    }
    const writer = await pool.connect();
    const store = await openPgStore(url);
    // Waiting on a row lock fails fast here instead of hanging the test.
    const impatient = new pg.Pool({ connectionString: url, max: 1, options: '-c lock_timeout=2000' });
    pools.push(impatient);
    try {
      // A worker's answer to b, written but not committed yet: it supersedes nothing until it is.
      await writer.query('BEGIN');
      await writer.query(insert, ['b', JSON.stringify({ label: 'newB' }), new Date().toISOString()]);
      expect(await pruneRawBodiesPg(store.pool, { keepDays: 0 })).toMatchObject({ dropped: 1, kept: 2 });
      expect(labels(await pgBodies(pool))).toEqual(['latestE', 'onlyB']);
      await writer.query('COMMIT');
      // Another prune deleting onlyB (its row locked, not committed): this one skips it rather than wait.
      await writer.query('BEGIN');
      await writer.query(`SELECT id FROM raw_responses WHERE body = $1 FOR UPDATE`, [JSON.stringify({ label: 'onlyB' })]);
      expect(await pruneRawBodiesPg(impatient, { keepDays: 0 })).toMatchObject({ dropped: 0 });
      await writer.query('ROLLBACK');
      const both = await Promise.all([pruneRawBodiesPg(store.pool, { keepDays: 0 }), pruneRawBodiesPg(store.pool, { keepDays: 0 })]);
      expect(both.map((r) => r.dropped).sort()).toEqual([0, 1]);
      expect(labels(await pgBodies(pool))).toEqual(['latestE', 'newB']);
    } finally {
      writer.release();
      await store.close();
    }
  });
});

forEachEngine("a job's keepRawDays", (engine) => {
  it("drops the job's superseded bodies at the end of a run after a refresh, and no other job's (without it every body is kept)", async () => {
    const sandbox = await sandboxes({ tokens: { [TOKEN]: 10_000 } });
    const jobsWs = await makeWorkspace();
    try {
      const db = await engine.open(jobsWs.dir);
      await jobsWs.write('kept.csv', csv(['post_url'], postUrls(3).map((u) => [u])));
      await jobsWs.write('pruned.csv', csv(['post_url'], postUrls(4, 100).map((u) => [u])));
      const post = { operation: 'post-details', rate: FAST_RATE, retry: FAST_RETRY };
      const jobs = await jobsWs.load(
        await jobsWs.job('pruned', { ...post, input: { csv: 'pruned.csv', column: 'post_url' }, keepRawDays: 0 }),
        await jobsWs.job('kept', { ...post, input: { csv: 'kept.csv', column: 'post_url' }, keepRawDays: null }),
      );
      for (const refresh of [false, true]) {
        const summary = await runJobs({ dbPath: db.locator, jobs, api: { baseUrl: sandbox.url, token: TOKEN }, requestTimeoutMs: 5000, refresh });
        expect(summary.status).toBe('completed');
      }
      const rows = await db.rows(`SELECT t.job, count(*) AS bodies, count(DISTINCT r.request_key) AS lookups
        FROM raw_responses r JOIN tasks t ON t.id = r.task_id GROUP BY t.job ORDER BY t.job`);
      expect(rows).toEqual([{ job: 'kept', bodies: 6, lookups: 3 }, { job: 'pruned', bodies: 4, lookups: 4 }]);
      expect(await db.taskStatuses('kept')).toEqual({ done: 3 });
      expect(await db.taskStatuses('pruned')).toEqual({ done: 4 });
      expect(await db.count("SELECT count(*) FROM netingest_meta WHERE key = 'raw_pruned_at'")).toBe(1);
    } finally {
      await jobsWs.cleanup();
    }
  }, 30_000);
});

describe('netingest prune on SQLite', () => {
  it('loads neither the PostgreSQL driver nor the PostgreSQL prune', async () => {
    const ws = await makeWorkspace();
    try {
      openDatabase(ws.db).close();
      const loads = join(ws.dir, 'loads.txt');
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', join(ROOT, 'test/fixtures/record-loads.mjs'), join(ROOT, 'src/cli/bin.mjs'),
        'prune', '--db', ws.db, '--dry-run'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, LOADS_FILE: loads } });
      expect(stdout).toMatch(/^0 raw bodies received before/);
      const loaded = (await readFile(loads, 'utf8')).split('\n');
      expect(loaded.filter((u) => /\/node_modules\/pg\/|\/src\/store\/pg\/(?!database-url\.ts$)/.test(u))).toEqual([]);
    } finally {
      await ws.cleanup();
    }
  }, 30_000);
});
