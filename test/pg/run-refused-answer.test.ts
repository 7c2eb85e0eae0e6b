/**
 * An answer whose rows the database refuses (a value past what it takes: here a constraint the dataset's owner
 * added, as a CHECK on PostgreSQL and a trigger on SQLite, since every value netingest knows to be refused is already
 * held back). Before, the refusal failed the answer's whole group: the run ended `failed` with every answer of the
 * group paid and lost, and the next night paid for them again and failed again. Now the group is written again an
 * outcome at a time: the others are stored, and the refused answer is kept apart as one its task failed on
 * (STORE_REFUSED, its body in raw_responses), so the next run does not pay for it again, and reprocess stores it once
 * the database takes it. How a group
 * is written again in parts is the writers' tests' (pg-writer-groups, run-result-writer): here the run's whole way.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { reprocessDatabase } from '../../src/runner/reprocess.ts';
import { postService } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { forEachEngine, type TestDb, type TestEngine } from './engines.ts';

const TOKEN = 'refused-answer-token-0001';
const POSTS = 12;
let ws: OpsWorkspace;
const startFake = useFakeServices();

beforeEach(async () => {
  ws = await opsWorkspace({ posts: POSTS, concurrency: 4, retries: 1 });
});
afterEach(() => ws.cleanup());

/** The dataset refuses a post whose author is named `name`: what any value past the engine's limits does. */
async function refusing(engine: TestEngine, name: string): Promise<TestDb> {
  const db = await engine.created(ws.dir);
  await db.run(engine.name === 'postgres'
    ? `ALTER TABLE posts ADD CONSTRAINT test_refused_author CHECK (author_name IS DISTINCT FROM '${name}') NOT VALID`
    : `CREATE TRIGGER test_refused_author BEFORE INSERT ON posts WHEN NEW.author_name = '${name}' BEGIN SELECT RAISE(ABORT, 'test_refused_author'); END`);
  return db;
}

forEachEngine('an answer the database refuses', (engine) => {
  it('stores the other answers, keeps the refused one apart with its task failed, and does not pay for it again', async () => {
    let calls = 0;
    const service = postService((base, call) => ({ ...base, author: { ...base.author, name: call === 3 ? 'Refused' : base.author.name } }));
    const baseUrl = await startFake((req, res) => {
      if (req.url !== '/v1/api/auth') calls += 1;
      service(req, res);
    });
    const db = await refusing(engine, 'Refused');
    const run = async () => runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.postsJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
    const summary = await run();
    expect(summary.status).toBe('completed_with_failures');
    expect(await db.taskStatuses('posts')).toEqual({ done: POSTS - 1, failed: 1 });
    expect(await db.rows('SELECT last_error_code AS code, retryable FROM tasks WHERE status = ?', 'failed')).toEqual([{ code: 'STORE_REFUSED', retryable: 0 }]);
    const [failed] = await db.rows<{ message: string }>('SELECT last_error AS message FROM tasks WHERE status = ?', 'failed');
    expect(failed!.message).toMatch(/^the database refused this answer's rows: .*test_refused_author/);
    expect(await db.count('SELECT count(*) FROM posts')).toBe(POSTS - 1);
    expect(await db.count("SELECT count(*) FROM posts WHERE author_name = 'Refused'")).toBe(0);
    // Every paid answer's body is kept, the refused one marked for reprocess; every call is in api_calls.
    expect(await db.rows('SELECT error_code AS code FROM raw_responses WHERE error_code IS NOT NULL')).toEqual([{ code: 'STORE_REFUSED' }]);
    expect(await db.count('SELECT count(*) FROM raw_responses')).toBe(POSTS);
    expect(await db.count('SELECT count(*) FROM api_calls WHERE status = 200')).toBe(POSTS);
    expect(calls).toBe(POSTS);
    await run();
    expect(calls).toBe(POSTS);
    // Once the database takes it, reprocess stores the kept answer and settles its task, without a call.
    await db.run(engine.name === 'postgres' ? 'ALTER TABLE posts DROP CONSTRAINT test_refused_author' : 'DROP TRIGGER test_refused_author');
    const report = await reprocessDatabase(db.locator);
    expect(report).toMatchObject({ recovered: 1, tasksRecovered: 1, invalid: 0 });
    expect(await db.taskStatuses('posts')).toEqual({ done: POSTS });
    expect(await db.count("SELECT count(*) FROM posts WHERE author_name = 'Refused'")).toBe(1);
    expect(calls).toBe(POSTS);
  }, 60_000);

  it('stops the run when answer after answer is refused, rather than pay for a whole input that stores nothing', async () => {
    const baseUrl = await startFake(postService((base) => ({ ...base, author: { ...base.author, name: 'Refused' } })));
    const db = await refusing(engine, 'Refused');
    const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.postsJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('stopped_unusable');
    expect(String(summary.error?.message)).toMatch(/^post-details: 5 paid answers in a row were refused by the database \(first: .*test_refused_author/);
    expect(await db.count('SELECT count(*) FROM posts')).toBe(0);
    const stored = await db.count("SELECT count(*) FROM raw_responses WHERE error_code = 'STORE_REFUSED'");
    expect(stored).toBe(await db.count('SELECT count(*) FROM api_calls WHERE status = 200'));
    expect(stored).toBeLessThan(POSTS);
  }, 60_000);
});
