/**
 * Retention of raw bodies: gzip on write, `netingest prune` drops only superseded bodies past the period, and
 * reprocess after a prune keeps what it could rebuild before. A job's keepRawDays, on both engines, is
 * test/pg/raw-retention.test.ts.
 */
import { statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { ingestInTransaction } from '../support/store-helpers.ts';
import { saveRawResponse } from '../../src/store/raw-archive.ts';
import { pruneRawBodies } from '../../src/store/raw-prune.ts';
import { reprocess } from '../../src/runner/reprocess.ts';
import type { SearchJobsSubject } from '../../src/operations/search-jobs.ts';
import { job, jobsRequest, jobsResponse } from '../support/db-fixtures.ts';
import { cliEnv, csv, FAST_RATE, FAST_RETRY, inProcess, postUrls, query, run, useWorkspaces, type Workspace } from '../support/run-helpers.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

const workspace = useWorkspaces();
const sandboxes = useSandboxes();
const TOKEN = 'retention-token-5b1e';
const DAY = 86_400_000;
const NOW = new Date('2026-11-25T12:00:00.000Z');
const daysAgo = (d: number) => new Date(NOW.getTime() - d * DAY).toISOString();

/** Stores one search-jobs answer the way a run does: its rows, then its body. */
function answer(db: Database, req: SearchJobsSubject, jobNumbers: number[], at: string, errorCode: string | null = null): number {
  const res = jobsResponse(jobNumbers.map((n) => job(n)));
  return db.sqlite.transaction(() => {
    if (errorCode === null) ingestInTransaction(db, req, res, at);
    return saveRawResponse(db)({ operation: 'search-jobs', request: req, body: JSON.stringify(res), receivedAt: at, runId: 1, taskId: null, errorCode });
  })();
}

const ids = (db: Database) => db.sqlite.prepare('SELECT id FROM raw_responses ORDER BY id').pluck().all() as number[];

describe('pruneRawBodies', () => {
  it('drops only bodies past the period that a newer accepted answer to the same request superseded', async () => {
    const ws = await workspace();
    const db = openDatabase(ws.db);
    try {
      const a = jobsRequest(0);
      const b = jobsRequest(10);
      const c = { ...jobsRequest(0), searchKey: 'other-search' };
      const oldA = answer(db, a, [1, 2], daysAgo(40));
      const oldWrongA = answer(db, a, [3], daysAgo(35), 'SCHEMA'); // superseded by the answer below
      const recentA = answer(db, a, [1], daysAgo(10)); // within the period: kept though superseded
      const latestA = answer(db, a, [1], daysAgo(1));
      const onlyB = answer(db, b, [5], daysAgo(60)); // the latest answer for b, however old
      const wrongC = answer(db, c, [7], daysAgo(50), 'SCHEMA'); // nothing answered c since: reprocess may still recover it

      const dry = pruneRawBodies(db, { keepDays: 30, now: NOW, dryRun: true });
      expect(dry).toMatchObject({ dropped: 2, kept: 4, cutoff: daysAgo(30) });
      expect(dry.droppedBytes).toBeGreaterThan(0);
      expect(ids(db)).toEqual([oldA, oldWrongA, recentA, latestA, onlyB, wrongC]);

      expect(pruneRawBodies(db, { keepDays: 30, now: NOW })).toMatchObject({ dropped: 2, kept: 4 });
      expect(ids(db)).toEqual([recentA, latestA, onlyB, wrongC]);
      expect(pruneRawBodies(db, { keepDays: 0, now: NOW })).toMatchObject({ dropped: 1, kept: 3 });
      expect(ids(db)).toEqual([latestA, onlyB, wrongC]);
    } finally {
      db.close();
    }
  });

  it('gzips the bodies an earlier netingest stored as text, when asked', async () => {
    const ws = await workspace();
    const db = openDatabase(ws.db);
    try {
      const body = JSON.stringify(jobsResponse([job(1), job(2), job(3), job(4), job(5), job(6)]));
      db.sqlite.prepare(`INSERT INTO raw_responses (operation, request_key, request_json, body, received_at) VALUES ('search-jobs', 'k', '{}', ?, ?)`).run(body, daysAgo(1));
      expect(pruneRawBodies(db, { keepDays: 30, now: NOW, dryRun: true, compressOld: true }).compressed).toBe(1);
      expect(db.sqlite.prepare('SELECT body_encoding FROM raw_responses').pluck().get()).toBeNull();
      const report = pruneRawBodies(db, { keepDays: 30, now: NOW, compressOld: true });
      expect(report.compressed).toBe(1);
      expect(report.compressedSavedBytes).toBeGreaterThan(body.length / 2);
      expect(db.sqlite.prepare('SELECT body_encoding, raw_body(body, body_encoding) AS text FROM raw_responses').get()).toEqual({ body_encoding: 'gzip', text: body });
    } finally {
      db.close();
    }
  });
});

describe('reprocess after a prune', () => {
  it('keeps the rows only a dropped body held, and rebuilds the rest from the kept bodies', async () => {
    const ws = await workspace();
    const db = openDatabase(ws.db);
    try {
      answer(db, jobsRequest(0), [1, 2], daysAgo(40));
      answer(db, jobsRequest(0), [1], daysAgo(1));
      const jobsBefore = db.sqlite.prepare('SELECT url FROM jobs ORDER BY url').pluck().all();
      expect(jobsBefore).toHaveLength(2);
      expect(pruneRawBodies(db, { keepDays: 30, now: NOW }).dropped).toBe(1);
      db.sqlite.prepare(`UPDATE jobs SET title = 'stale' WHERE url = ?`).run(job(1).url.replace('://www.', '://').replace(/\/$/, ''));
      const report = reprocess(db);
      expect(report).toMatchObject({ rebuiltFromScratch: false, rowsDeleted: 0, replayed: 1, invalid: 0 });
      expect(db.sqlite.prepare('SELECT url FROM jobs ORDER BY url').pluck().all()).toEqual(jobsBefore);
      expect(db.sqlite.prepare(`SELECT count(*) FROM jobs WHERE title = 'stale'`).pluck().get()).toBe(0);
    } finally {
      db.close();
    }
  });
});

describe('from the command line and a job', () => {
  async function postsJob(ws: Workspace, keepRawDays: number | null) {
    await ws.write('posts.csv', csv(['post_url'], postUrls(6).map((u) => [u])));
    return ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY, keepRawDays });
  }

  it('netingest prune: a dry run changes nothing; then it drops, vacuums and says how much', async () => {
    const sandbox = await sandboxes({ tokens: { [TOKEN]: 10_000 } });
    const ws = await workspace();
    const jobs = await ws.load(await postsJob(ws, null));
    await run(ws, sandbox, TOKEN, jobs);
    await run(ws, sandbox, TOKEN, jobs, { refresh: true });
    const env = cliEnv(sandbox, TOKEN);
    const dry = await inProcess(['prune', '--db', ws.db, '--keep-days', '0', '--dry-run'], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/^6 raw bodies received before \S+ and superseded by a newer answer would be dropped \(\d+\.\d MB\); 6 kept\.$/m);
    expect(query(ws, 'SELECT count(*) AS n FROM raw_responses')[0]).toEqual({ n: 12 });

    const done = await inProcess(['prune', '--db', ws.db, '--keep-days', '0', '--json'], env);
    expect(done.code, done.stderr).toBe(0);
    const report = JSON.parse(done.stdout);
    expect(report).toMatchObject({ dropped: 6, kept: 6 });
    expect(report.fileBytesAfter).toBe(statSync(ws.db).size);
    expect(query(ws, 'SELECT count(*) AS n FROM raw_responses')[0]).toEqual({ n: 6 });

    const bad = await inProcess(['prune', '--db', ws.db, '--keep-days', 'soon'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--keep-days soon: .*must be a number/);
  });
});
