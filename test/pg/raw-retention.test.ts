/**
 * Retention of raw bodies on both engines, each case said once and run on each: `netingest prune` drops only the
 * bodies past the period that a newer accepted answer to the same request superseded (a dry run changes nothing;
 * the text and --json say so), refuses a dataset that is not there, and a job's keepRawDays prunes its own bodies
 * at the end of a run. Engine-specific, and marked so: what the space figures measure (SQLite's file after VACUUM,
 * PostgreSQL's table on the server and its VACUUM), SQLite's gzip of text bodies and its loading no PostgreSQL
 * code, PostgreSQL's two prunes at once beside a body being written, and its read-only role refused. A run holding
 * the dataset refuses prune on both engines: test/pg/dataset-lock.test.ts. Reprocess after a prune:
 * test/pg/reprocess.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase } from '../../src/store/open.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { pruneRawBodiesPg } from '../../src/store/pg/raw-prune.ts';
import { pruneRawBodies } from '../../src/store/raw-prune.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { csv, FAST_RATE, FAST_RETRY, inProcess, makeWorkspace, postUrls } from '../support/run-helpers.ts';
import { builtCliLoads } from '../support/bundle-loads.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';
import { job, jobsResponse } from '../support/db-fixtures.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { forEachEngine, type TestDb, type TestEngine } from './engines.ts';
import { docsAnalystUrl } from './analyst-role.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';

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
const pools: pg.Pool[] = [];

async function pgDataset(): Promise<{ url: string; pool: pg.Pool }> {
  const url = await newMigratedPgDatabase('retention');
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pools.push(pool);
  return { url, pool };
}

async function pgBodies(pool: pg.Pool): Promise<string[]> {
  return (await pool.query<{ body: string }>('SELECT body FROM raw_responses ORDER BY id')).rows.map((r) => r.body);
}

/** A new dataset holding ARCHIVE, stored as a run stores bodies (no rows: prune reads raw_responses alone). */
let datasets = 0;
async function archived(engine: TestEngine, dir: string): Promise<TestDb> {
  const db = await engine.created(dir, `archive-${++datasets}.db`);
  for (const b of ARCHIVE) {
    await db.run(`INSERT INTO raw_responses (operation, request_key, request_json, body, received_at, error_code) VALUES (?, ?, '{}', ?, ?, ?)`,
      b.operation, b.key, bodyOf(b), daysAgo(b.days), b.errorCode ?? null);
  }
  return db;
}

const bodiesOf = async (db: TestDb) => (await db.rows<{ body: string }>('SELECT raw_body(body, body_encoding) AS body FROM raw_responses ORDER BY id')).map((r) => r.body);

async function prune(db: TestDb, ...flags: string[]): Promise<Record<string, number | boolean>> {
  const out = await inProcess(['prune', '--db', db.locator, '--keep-days', '30', '--json', ...flags]);
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout) as Record<string, number | boolean>;
}

forEachEngine('netingest prune', (engine) => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'netingest-prune-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Each case its own dataset: run at once, one case's client work overlaps another's wait on the server.
  describe.concurrent('each on its own dataset', () => {
    it('drops only bodies past the period that a newer accepted answer to the same request superseded; a dry run changes nothing', async () => {
      const db = await archived(engine, dir);
      const dry = await prune(db, '--dry-run');
      // oldA and oldWrongA (superseded by recentA), oldD (by latestD); recentA is within the period, onlyB and
      // otherOpD are their request's latest, wrongC was never superseded by an accepted answer.
      expect(dry).toMatchObject({ dropped: 3, kept: 6 });
      expect(dry.droppedBytes).toBeGreaterThan(0);
      expect(await bodiesOf(db)).toEqual(ARCHIVE.map(bodyOf));
      expect(await db.count("SELECT count(*) FROM netingest_meta WHERE key = 'raw_pruned_at'")).toBe(0);

      const done = await prune(db);
      expect({ dropped: done.dropped, kept: done.kept, droppedBytes: done.droppedBytes }).toEqual({ dropped: 3, kept: 6, droppedBytes: dry.droppedBytes });
      expect(labels(await bodiesOf(db))).toEqual(['latestA', 'latestD', 'onlyB', 'otherOpD', 'recentA', 'wrongC']);
      expect(await db.count("SELECT count(*) FROM netingest_meta WHERE key = 'raw_pruned_at'")).toBe(1);

      const text = await inProcess(['prune', '--db', db.locator, '--keep-days', '0', '--dry-run']);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(/^1 raw bodies received before \S+ and superseded by a newer answer would be dropped \(\d+\.\d MB\); 5 kept\.$/m);
      const bad = await inProcess(['prune', '--db', db.locator, '--keep-days', 'soon']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--keep-days soon: .*must be a number/);
    });

    it('says what its space figures measure: the file on SQLite, the table on the server and its VACUUM on PostgreSQL', async () => {
      const db = await archived(engine, dir);
      const done = await prune(db);
      const text = await inProcess(['prune', '--db', db.locator, '--keep-days', '0']);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(/^1 raw bodies received before \S+ and superseded by a newer answer dropped \(\d+\.\d MB\); 5 kept\.$/m);
      if (engine.name === 'sqlite') {
        // SQLite-specific: the file, after VACUUM.
        expect(done.fileBytesAfter).toBe(statSync(db.locator).size);
        expect(done).not.toHaveProperty('rawResponsesBytesAfter');
      } else {
        // PostgreSQL-specific: the table on the server (table, TOAST and indexes), and the plain VACUUM ran.
        expect(done).not.toHaveProperty('fileBytesAfter');
        expect(done.rawResponsesBytesAfter).toBeGreaterThan(0);
        expect(done.vacuumed).toBe(true);
        expect(await db.count(`SELECT count(*) FROM pg_stat_user_tables WHERE relname = 'raw_responses' AND last_vacuum IS NOT NULL`)).toBe(1);
        expect(text.stdout).toMatch(/raw_responses on the server \(table, TOAST and indexes\): \d+\.\d MB before, \d+\.\d MB after VACUUM/);
      }
    });

    it.runIf(engine.name === 'postgres')("(PostgreSQL) as docs/postgres.md's read-only analyst role: DB_READONLY (exit 1), with --vacuum too, dropping nothing", async () => {
      const db = await archived(engine, dir);
      const owner = new pg.Client({ connectionString: db.locator });
      await owner.connect();
      const asAnalyst = await docsAnalystUrl(owner, db.locator).finally(() => owner.end());
      for (const flags of [[], ['--vacuum']]) {
        const out = await inProcess(['prune', '--db', asAnalyst, '--keep-days', '30', ...flags]);
        expect(out.code, flags.join(' ')).toBe(EXIT.fatal);
        expect(out.stderr).toMatch(/^netingest: `netingest prune` was refused: database postgres:\/\/\S+ cannot be written \(cannot execute \w+ in a read-only transaction \[25006\]\): the server runs it read-only .*give --db the primary.* \[DB_READONLY\]\n$/);
      }
      expect(await bodiesOf(db)).toEqual(ARCHIVE.map(bodyOf));
      expect(await db.count("SELECT count(*) FROM netingest_meta WHERE key = 'raw_pruned_at'")).toBe(0);
    });

    it('refuses a dataset that is not there, and creates nothing', async () => {
      const db = await engine.openEmpty(dir, 'never-made.db');
      const out = await inProcess(['prune', '--db', db.locator, '--dry-run']);
      expect(out.code).toBe(2);
      expect(out.stderr).toMatch(/no (database at|netingest dataset in) \S+: nothing to prune/);
      if (engine.name === 'sqlite') expect(existsSync(db.locator)).toBe(false);
      else expect(await db.count(`SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`)).toBe(0);
    });
  });
});

describe.skipIf(!pgClusterUrl)(`(PostgreSQL) prune beside writers${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
  });

  it('drops nothing that a body still being written would supersede, and two prunes at once keep the latest answer', async () => {
    const { url, pool } = await pgDataset();
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
      const db = await engine.created(jobsWs.dir);
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

describe('(SQLite) netingest prune', () => {
  it('gzips the bodies an earlier netingest stored as text, when asked', async () => {
    const ws = await makeWorkspace();
    const db = openDatabase(ws.db);
    try {
      const body = JSON.stringify(jobsResponse([job(1), job(2), job(3), job(4), job(5), job(6)]));
      db.sqlite.prepare(`INSERT INTO raw_responses (operation, request_key, request_json, body, received_at) VALUES ('search-jobs', 'k', '{}', ?, ?)`).run(body, daysAgo(1));
      expect(pruneRawBodies(db, { keepDays: 30, dryRun: true, compressOld: true }).compressed).toBe(1);
      expect(db.sqlite.prepare('SELECT body_encoding FROM raw_responses').pluck().get()).toBeNull();
      const report = pruneRawBodies(db, { keepDays: 30, compressOld: true });
      expect(report.compressed).toBe(1);
      expect(report.compressedSavedBytes).toBeGreaterThan(body.length / 2);
      expect(db.sqlite.prepare('SELECT body_encoding, raw_body(body, body_encoding) AS text FROM raw_responses').get()).toEqual({ body_encoding: 'gzip', text: body });
    } finally {
      db.close();
      await ws.cleanup();
    }
  });

  it('loads neither the PostgreSQL driver nor the PostgreSQL prune', async () => {
    const ws = await makeWorkspace();
    try {
      openDatabase(ws.db).close();
      // The built CLI, as users run it: the modules of the files it loaded (a plain Node start, not tsx's).
      const { stdout, sources, packages } = await builtCliLoads(['prune', '--db', ws.db, '--dry-run']);
      expect(stdout).toMatch(/^0 raw bodies received before/);
      expect(sources).toContain('store/raw-prune.ts');
      expect(packages.filter((p) => p.startsWith('pg/'))).toEqual([]);
      expect(sources.filter((m) => /^store\/pg\/(?!database-url\.ts$)/.test(m))).toEqual([]);
    } finally {
      await ws.cleanup();
    }
  }, 30_000);
});
