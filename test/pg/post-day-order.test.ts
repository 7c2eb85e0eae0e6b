/**
 * The posts' day/month order (a `NN-NN-YYYY` day is read in the order the dataset's posts prove) is kept in
 * netingest_meta: a run reads it there rather than scanning every stored post for a proof at its start (a full
 * scan of a large dataset each night, since the order the posts do not use is never proven), and a dataset an
 * earlier release made learns it from its posts once.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { reprocessDatabase } from '../../src/runner/reprocess.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { postService } from '../support/db-fixtures.ts';
import { forEachEngine, type TestDb } from './engines.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';

const TOKEN = 'day-order-token-0001';
const POSTS = 3;
const T = '2026-11-01T00:00:00.000Z';
let ws: OpsWorkspace;
const startFake = useFakeServices();

beforeEach(async () => {
  ws = await opsWorkspace({ posts: POSTS, retries: 1 });
});
afterEach(() => ws.cleanup());

/** Runs the posts job against a service whose every post has the day `timestamp`. */
async function runPosts(db: TestDb, timestamp: string): Promise<void> {
  const baseUrl = await startFake(postService((base) => ({ ...base, post: { ...base.post, timestamp } })));
  const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.postsJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
  expect(summary.jobs[0]).toMatchObject({ done: POSTS, failed: 0 });
}

const daysOf = async (db: TestDb, raw: string) => (await db.rows<{ day: string | null }>('SELECT posted_on AS day FROM posts WHERE posted_raw = ?', raw)).map((r) => r.day);
const kept = (db: TestDb) => db.rows(`SELECT key, value FROM netingest_meta WHERE key LIKE 'posts_prove_%' ORDER BY key`);

forEachEngine('the posts\' day/month order', (engine) => {
  it('is read where netingest_meta keeps it, not from the posts', async () => {
    const db = await engine.created(ws.dir);
    // No stored post proves an order: only what is kept says day first.
    await db.run(`INSERT INTO netingest_meta (key, value) VALUES ('posts_prove_dmy', '1'), ('posts_prove_mdy', '0')`);
    await runPosts(db, '03-04-2026');
    expect(await daysOf(db, '03-04-2026')).toEqual(Array(POSTS).fill('2026-04-03'));
  }, 60_000);

  it('is learned from the posts of a dataset an earlier release made, once, and kept', async () => {
    const db = await engine.created(ws.dir);
    await db.run(`INSERT INTO posts (post_id, url, posted_raw, posted_on, first_seen_at, updated_at)
      VALUES ('activity-1', 'https://www.network.com/posts/earlier', '22-11-2026', '2026-11-22', ?, ?)`, T, T);
    expect(await kept(db)).toEqual([]);
    await runPosts(db, '03-04-2026');
    expect(await daysOf(db, '03-04-2026')).toEqual(Array(POSTS).fill('2026-04-03'));
    expect(await kept(db)).toEqual([{ key: 'posts_prove_dmy', value: '1' }, { key: 'posts_prove_mdy', value: '0' }]);
    // reprocess rebuilds the posts from the answers kept, which prove no order: what was kept goes with the posts.
    await reprocessDatabase(db.locator);
    expect(await daysOf(db, '03-04-2026')).toEqual(Array(POSTS).fill(null));
    expect(await kept(db)).toEqual([{ key: 'posts_prove_dmy', value: '0' }, { key: 'posts_prove_mdy', value: '0' }]);
  }, 60_000);
});
