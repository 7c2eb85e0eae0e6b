/**
 * `netingest reprocess` on both engines, each case said once and run on each: the tables rebuilt from the raw
 * bodies alone (hand-built and sandbox bodies, then the dataset of a real run of the example jobs), bodies that
 * no longer read counted and listed, a wrong-shape body recovered after a contract fix, a body the database
 * refuses skipped alone, the kept bodies replayed over the tables after a prune, the rebuild refused while a run
 * holds the dataset and undone whole when it fails mid-way. Fixtures are built once on SQLite the way the runner
 * stores answers and loaded on each engine (`netingest copy` for PostgreSQL), so both rebuild the same bodies.
 * PostgreSQL-specific cases (a SIGKILL mid-way, the password and NETINGEST_DATABASE_URL, a server that runs the
 * database read-only) are marked as such.
 */
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../src/api/schemas.ts';
import { reprocessDatabase, type ReprocessReport } from '../../src/runner/reprocess.ts';
import { openDatabase } from '../../src/store/open.ts';
import { openStore } from '../../src/store/open-store.ts';
import { knownMigrations } from '../../src/store/migration-state.ts';
import { PG_MIGRATIONS_FOLDER } from '../../src/store/pg/open.ts';
import { createIngestor, NORMALIZED_TABLES } from '../../src/store/ingest/index.ts';
import type { AnySubject } from '../../src/operations/index.ts';
import { saveRawResponse } from '../../src/store/raw-archive.ts';
import { decodeRawBody } from '../../src/store/raw-body.ts';
import { LockedError } from '../../src/store/run-lock.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { UsageError } from '../../src/errors.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { inProcess, spawnCli, type Workspace } from '../support/run-helpers.ts';
import { validateResponse, type IngestResponseFor } from '../support/store-helpers.ts';
import { company, job, jobsRequest, jobsResponse, postRequest, postResponse, similarRequest, similarResponse } from '../support/db-fixtures.ts';
import { forEachEngine, type TestDb, type TestEngine } from './engines.ts';
import { runExampleJobs } from './read-dataset.ts';

type Row = Record<string, unknown>;
const TOKEN = 'reprocess-token-5d1e';

const dir = mkdtempSync(join(tmpdir(), 'netingest-reprocess-'));
let sandbox: Sandbox | undefined;
let example: Promise<Workspace> | undefined;
afterAll(async () => {
  await sandbox?.stop();
  await (await example)?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** The example jobs' run, into SQLite, made once for both engines (each loads its own copy). */
const exampleRun = () => (example ??= runExampleJobs(['lookalikes.json', 'job-search.json', 'post-engagement.ts']));

/** The tables reprocess writes, and the columns left out of the comparison (an id numbered per engine, a "now"). */
const WRITTEN: Record<string, string[]> = {
  ...Object.fromEntries(NORMALIZED_TABLES.map((t) => [t, []])),
  answer_anomalies: ['id'],
  tasks: ['updated_at'],
};
const NORMALIZED: Record<string, string[]> = Object.fromEntries(NORMALIZED_TABLES.map((t) => [t, []]));

/** A row as compared: JSON text as its value (jsonb's text is not SQLite's), the left-out columns dropped. */
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

async function tables(db: TestDb, which: Record<string, string[]> = WRITTEN): Promise<Record<string, Row[]>> {
  const out: Record<string, Row[]> = {};
  for (const [t, leftOut] of Object.entries(which)) out[t] = sorted((await db.rows<Row>(`SELECT * FROM ${t}`)).map((r) => comparable(r, leftOut)));
  return out;
}
const rowCount = (t: Record<string, Row[]>) => Object.values(t).reduce((n, rows) => n + rows.length, 0);

/** Engine-specific: what is left of a lock once nothing holds the dataset (SQLite's run_lock row, PostgreSQL's advisory lock). */
function locksLeft(engine: TestEngine, db: TestDb): Promise<number> {
  return engine.name === 'sqlite'
    ? db.count('SELECT count(*) FROM run_lock')
    : db.count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`);
}

/** Engine-specific DDL, one behaviour: the database itself refuses to store the post `postId` ('test_refused'). */
async function refusePost(engine: TestEngine, db: TestDb, postId: string): Promise<() => Promise<void>> {
  if (engine.name === 'postgres') {
    await db.run(`ALTER TABLE posts ADD CONSTRAINT test_refused CHECK (post_id <> '${postId}') NOT VALID`);
    return () => db.run('ALTER TABLE posts DROP CONSTRAINT test_refused');
  }
  await db.run(`CREATE TRIGGER test_refused BEFORE INSERT ON posts WHEN NEW.post_id = '${postId}' BEGIN SELECT RAISE(ABORT, 'test_refused'); END`);
  return () => db.run('DROP TRIGGER test_refused');
}

/** Holds the dataset as a run does, through the store every command uses, until the returned release. */
async function holdAsRun(db: TestDb): Promise<() => Promise<void>> {
  const run = await (await openStore(db.locator)).openRun({});
  // As the runner ends a run: the hold let go, then the store closed.
  return async () => {
    await run.hold.release();
    await run.close();
  };
}

let fixtures = 0;

/**
 * A new SQLite fixture written the way the runner stores answers: normalized rows and the raw body in one
 * transaction (`answer`), or a body archived alone (`archive`, as a body that did not read is). `on` loads it.
 */
function fixture() {
  const file = join(dir, `fixture-${++fixtures}.db`);
  const database = openDatabase(file);
  const ingestor = createIngestor(database);
  const save = saveRawResponse(database);
  return {
    answer<R extends AnySubject>(req: R, body: string, receivedAt: string): void {
      database.sqlite.transaction(() => {
        ingestor.ingestAnswer(req, validateResponse(req.operation, parseJsonBody(body)) as IngestResponseFor<R>, receivedAt);
        save({ operation: req.operation, request: req, body, receivedAt, runId: 1, taskId: null });
      })();
    },
    archive(req: AnySubject, body: string, receivedAt: string): void {
      save({ operation: req.operation, request: req, body, receivedAt, runId: 2, taskId: null });
    },
    async on(engine: TestEngine): Promise<TestDb> {
      database.close();
      return engine.load(dir, file);
    },
  };
}

let sandboxStarted: Promise<Sandbox> | undefined;
async function sandboxBody(path: string, init: RequestInit = {}): Promise<string> {
  sandbox = await (sandboxStarted ??= startSandbox({ tokens: { [TOKEN]: 1_000_000 }, notFoundRate: 0, logRequests: false }));
  const res = await fetch(`${sandbox.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TOKEN}`, accept: 'application/json', 'content-type': 'application/json' },
  });
  expect(res.status).toBe(200);
  return res.text();
}

/** Each engine's report of the real run's first rebuild: the same bodies must give the same report. */
const firstReports: Partial<Record<TestEngine['name'], ReprocessReport>> = {};

forEachEngine('reprocess', (engine) => {
  // Each case its own dataset: run at once, one case's client work overlaps another's wait on the server.
  describe.concurrent('hand-built and sandbox bodies', () => {
    it('rebuilds exactly the same dataset from raw_responses, and again from its own rebuild', async () => {
      const fx = fixture();
      // Hand-built bodies over two days, with a company seen again with other child sets.
      fx.answer(similarRequest(1, 2), JSON.stringify(similarResponse([company(1), company(2)])), '2026-11-20T10:00:00.000Z');
      fx.answer(postRequest, JSON.stringify(postResponse()), '2026-11-20T10:00:01.000Z');
      fx.answer(jobsRequest(0), JSON.stringify(jobsResponse([job(1), job(2)])), '2026-11-20T10:00:02.000Z');
      const changed = company(1, { industries: ['Robotics', 'AI'], specialities: null, hashtags: ['#x'] });
      fx.answer(similarRequest(2, 2), JSON.stringify(similarResponse([changed, company(3)], 2)), '2026-11-21T09:00:00.000Z');
      fx.answer(jobsRequest(10), JSON.stringify(jobsResponse([job(2), job(3)])), '2026-11-21T09:00:01.000Z');
      // Real bodies from the sandbox, over HTTP, byte for byte as received.
      const simBody = await sandboxBody('/v1/api/similar-companies', {
        method: 'POST',
        body: JSON.stringify({ url: 'network.com/company/sandbox-co', account: {}, page: 1, num: 5 }),
      });
      fx.answer({ operation: 'similar-companies', referenceUrl: 'https://network.com/company/sandbox-co', filterKey: 'none', filters: {}, page: 1, num: 5 }, simBody, '2026-11-21T09:00:02.000Z');
      const postUrl = 'https://network.com/posts/someone_topic-activity-7000000000000000001-xYz';
      fx.answer({ operation: 'post-details', postUrl }, await sandboxBody(`/v1/api/post-details?url=${encodeURIComponent(postUrl)}`), '2026-11-21T09:00:03.000Z');
      const jobsBody = await sandboxBody('/v1/api/search-jobs?keywords=data%20engineer&location=berlin&start=0');
      fx.answer({ operation: 'search-jobs', searchKey: 'sandbox-search', query: { keywords: 'data engineer', location: 'berlin' }, start: 0 }, jobsBody, '2026-11-21T09:00:04.000Z');
      const db = await fx.on(engine);

      const before = await tables(db, NORMALIZED);
      expect(before['companies']!.length).toBeGreaterThan(3);
      expect(before['jobs']!.length).toBeGreaterThan(3);
      expect(before['posts']!.length).toBe(2);
      const report = await reprocessDatabase(db.locator, { batchSize: 3 });
      expect(report).toMatchObject({ responses: 8, replayed: 8, invalid: 0, rejected: [], rowsDeleted: rowCount(before) });
      expect(await tables(db, NORMALIZED)).toEqual(before);
      await reprocessDatabase(db.locator);
      expect(await tables(db, NORMALIZED)).toEqual(before);
    });

    it('replays a body that starts with a byte-order mark, as the client accepted it', async () => {
      // The client and the writer strip a leading BOM before parsing; reprocess read it as "not JSON" and the
      // rebuild silently dropped the rows of an answer that was paid for and valid.
      const fx = fixture();
      fx.answer(postRequest, '\ufeff' + JSON.stringify(postResponse()), '2026-11-20T10:00:00.000Z');
      const db = await fx.on(engine);
      const before = await tables(db, NORMALIZED);
      expect(before['posts']).toHaveLength(1);
      expect(await reprocessDatabase(db.locator)).toMatchObject({ responses: 1, replayed: 1, invalid: 0 });
      expect(await tables(db, NORMALIZED)).toEqual(before);
    });

    it('counts and reports bodies that no longer validate, without failing the rebuild', async () => {
      const fx = fixture();
      fx.answer(postRequest, JSON.stringify(postResponse()), '2026-11-20T10:00:00.000Z');
      // A member of another type is drift, read as NULL; a body with nothing of a post cannot be read at all.
      const { PostId: _id, author: _a, post: _p, engagement: _e, ...broken } = postResponse();
      fx.archive(postRequest, JSON.stringify(broken), '2026-11-21T00:00:00.000Z');
      fx.archive(postRequest, '{"success": tru', '2026-11-21T00:00:01.000Z');
      const db = await fx.on(engine);
      const before = await tables(db, NORMALIZED);
      const report = await reprocessDatabase(db.locator);
      expect(report).toMatchObject({ responses: 3, replayed: 1, invalid: 2 });
      expect(report.rejected[0]).toMatchObject({ operation: 'post-details', reason: expect.stringMatching(/no longer valid: .*none of PostId, author, post, engagement/) });
      expect(report.rejected[1]).toMatchObject({ reason: expect.stringMatching(/^not JSON/) });
      expect(await tables(db, NORMALIZED)).toEqual(before);
    });

    it('the command prints row writes, not rows (a row stored by two responses counts twice), and --json; it leaves no lock', async () => {
      // One post with two media rows, answered twice: 3 rows in the tables, 6 row writes by the replay.
      const fx = fixture();
      fx.answer(postRequest, JSON.stringify(postResponse()), '2026-11-20T10:00:00.000Z');
      fx.answer(postRequest, JSON.stringify(postResponse()), '2026-11-21T10:00:00.000Z');
      const db = await fx.on(engine);
      const before = await tables(db, NORMALIZED);
      expect(rowCount(before)).toBe(3);
      const text = await inProcess(['reprocess', '--db', db.locator]);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain('Normalized rows: 3 deleted, then 6 row writes (inserts and updates: a row stored again counts again).');
      await db.run('UPDATE posts SET text_content = ?', 'tampered');
      const json = await inProcess(['reprocess', '--db', db.locator, '--json']);
      expect(json.code, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout)).toMatchObject({ responses: 2, replayed: 2, invalid: 0, rowsWritten: 6 });
      expect(await tables(db, NORMALIZED)).toEqual(before);
      expect(await locksLeft(engine, db)).toBe(0);
    });

    it.runIf(engine.name === 'postgres')('(PostgreSQL) refuses a dataset the server runs read-only (DB_READONLY, exit 1), changing nothing', async () => {
      const fx = fixture();
      fx.answer(postRequest, JSON.stringify(postResponse()), '2026-11-20T10:00:00.000Z');
      const db = await fx.on(engine);
      // Rows the rebuild would change, were it let.
      await db.run('UPDATE posts SET text_content = ?', 'tampered');
      const before = await tables(db);
      await db.run(`ALTER DATABASE "${new URL(db.locator).pathname.slice(1)}" SET default_transaction_read_only = on`);
      const cli = await inProcess(['reprocess', '--db', db.locator]);
      expect(cli.code).toBe(EXIT.fatal);
      expect(cli.stderr).toMatch(/^netingest: `netingest reprocess` was refused: database postgres:\/\/\S+ cannot be written \(cannot execute DELETE in a read-only transaction \[25006\]\): the server runs it read-only .*give --db the primary.* \[DB_READONLY\]\n$/);
      expect(await tables(db)).toEqual(before);
      expect(await locksLeft(engine, db)).toBe(0);
    });

    it.runIf(engine.name === 'postgres')('(PostgreSQL) says it was reprocess that was refused: a dataset too new, one to upgrade under a run', async () => {
      const fx = fixture();
      fx.answer(postRequest, JSON.stringify(postResponse()), '2026-11-20T10:00:00.000Z');
      const db = await fx.on(engine);
      // A migration this build does not know: a newer netingest's dataset.
      const future = knownMigrations(PG_MIGRATIONS_FOLDER).at(-1)!.folderMillis + 86_400_000;
      await db.run('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)', 'f'.repeat(64), future);
      const tooNew = await inProcess(['reprocess', '--db', db.locator]);
      expect(tooNew.code).toBe(EXIT.fatal);
      expect(tooNew.stderr).toMatch(/^netingest: `netingest reprocess` was refused: database postgres:\/\/\S+ was created or upgraded by a newer version of netingest .*\[DB_TOO_NEW\]\n$/);
      await db.run('DELETE FROM __drizzle_migrations WHERE created_at = ?', future);
      // An older release's dataset (its last migration undone) while a run holds it: the upgrade would go under the run.
      const release = await holdAsRun(db);
      try {
        await db.run('ALTER TABLE account_balance DROP COLUMN credits_counted_from');
        await db.run('DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)');
        const underRun = await inProcess(['reprocess', '--db', db.locator]);
        expect(underRun.code).toBe(EXIT.locked);
        expect(underRun.stderr).toMatch(/^netingest: `netingest reprocess` was refused: database postgres:\/\/\S+ holds a dataset of an earlier netingest, to be upgraded, but netingest workers are using it .*\[LOCKED\]\n$/);
      } finally {
        await release();
      }
      // The lock's own refusal names reprocess already, once.
      const held = await holdAsRun(db);
      try {
        const whileRun = await inProcess(['reprocess', '--db', db.locator]);
        expect(whileRun.code).toBe(EXIT.locked);
        expect(whileRun.stderr.match(/netingest reprocess/g)).toHaveLength(2);
        expect(whileRun.stderr).not.toContain('was refused');
      } finally {
        await held();
      }
      expect(await locksLeft(engine, db)).toBe(0);
    });

    it.runIf(engine.name === 'sqlite')('(SQLite) reprocess and prune say it was they that were refused: a dataset too new, another program\'s file', async () => {
      const fx = fixture();
      fx.answer(postRequest, JSON.stringify(postResponse()), '2026-11-20T10:00:00.000Z');
      const db = await fx.on(engine);
      // A migration this build does not know: a newer netingest's dataset.
      await db.run('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)', 'f'.repeat(64), knownMigrations().at(-1)!.folderMillis + 86_400_000);
      const other = join(dir, `another-program-${++fixtures}.db`);
      const notOurs = new BetterSqlite3(other);
      notOurs.exec('CREATE TABLE notes (body TEXT)');
      notOurs.close();
      for (const command of ['reprocess', 'prune']) {
        const tooNew = await inProcess([command, '--db', db.locator]);
        expect(tooNew.code, command).toBe(EXIT.fatal);
        expect(tooNew.stderr).toMatch(new RegExp(`^netingest: \`netingest ${command}\` was refused: database \\S+ was created or upgraded by a newer version of netingest .*\\[DB_TOO_NEW\\]\n$`));
        const another = await inProcess([command, '--db', other]);
        expect(another.code, command).toBe(EXIT.fatal);
        expect(another.stderr).toMatch(new RegExp(`^netingest: \`netingest ${command}\` was refused: \\S+ is a SQLite database of another program .*\\[DB_NOT_NETINGEST\\]\n$`));
      }
      expect(await locksLeft(engine, db)).toBe(0);
    });

    it('refuses a dataset that is not there, creating nothing', async () => {
      const missing = await engine.openEmpty(dir, 'never-made.db');
      const err = await reprocessDatabase(missing.locator).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UsageError);
      expect(String((err as Error).message)).toMatch(/^no (database at|netingest dataset in) \S+: nothing to reprocess/);
      if (engine.name === 'sqlite') expect(existsSync(missing.locator)).toBe(false);
      else expect(await missing.count(`SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`)).toBe(0);
    });
  });

  describe("a real run's dataset (the example jobs against the sandbox)", () => {
    let db: TestDb;
    beforeAll(async () => {
      db = await engine.load(dir, (await exampleRun()).db);
    }, 120_000);

    it('rebuilds the tables the run stored, and recovers a wrong-shape body after a contract fix', async () => {
      const asRun = await tables(db);
      expect(asRun['posts']!.length).toBeGreaterThan(0);
      expect(asRun['job_search_results']!.length).toBeGreaterThan(0);
      // The latest body of a post task, archived as a wrong-shape answer (its post moved under `data`: no contract reads it).
      const [post] = await db.rows<{ id: number; taskId: number; body: string | Buffer; enc: string | null }>(`SELECT r.id, r.task_id AS "taskId", r.body, r.body_encoding AS enc FROM raw_responses r
        WHERE r.operation = 'post-details' AND r.id = (SELECT max(id) FROM raw_responses WHERE task_id = r.task_id) ORDER BY r.id LIMIT 1`);
      const original = decodeRawBody(post!.body, post!.enc);
      await db.run(`UPDATE raw_responses SET body = ?, body_encoding = NULL, error_code = 'SCHEMA' WHERE id = ?`, `{"data": ${original}}`, post!.id);
      await db.run(`UPDATE tasks SET status = 'failed', last_error_code = 'SCHEMA', last_error = 'wrong shape', retryable = 0, completed_at = NULL WHERE id = ?`, post!.taskId);
      // A body of an operation this build does not know, and normalized rows altered by hand.
      await db.run(`INSERT INTO raw_responses (id, operation, request_key, request_json, body, received_at, run_id, task_id)
        SELECT max(id) + 1, 'no-such-operation', 'k', '{}', '{}', '2026-11-20T10:00:00.000Z', NULL, NULL FROM raw_responses`);
      await db.run(`UPDATE companies SET name = 'tampered'`);
      await db.run(`DELETE FROM job_search_results WHERE position < 3`);
      const normalizedBefore = rowCount(await tables(db, NORMALIZED));

      // Small pages, so the keyset paging runs many times.
      const first = await reprocessDatabase(db.locator, { batchSize: 7 });
      const responses = await db.count('SELECT count(*) FROM raw_responses');
      expect(first).toMatchObject({ responses, replayed: responses - 2, invalid: 2, stillRejected: 1, recovered: 0, tasksRecovered: 0, rebuiltFromScratch: true, rowsDeleted: normalizedBefore });
      const unknownId = await db.count(`SELECT id FROM raw_responses WHERE operation = 'no-such-operation'`);
      expect(first.rejected.map((r) => r.id)).toEqual([post!.id, unknownId]);
      expect(first.rejected[0]!.reason).toMatch(/^still does not match the API's documented interface \(its task stays failed\)/);
      expect(first.rejected[1]!.reason).toBe('unknown operation no-such-operation');
      // Cross-engine: the same bodies give PostgreSQL the very report SQLite gave (its block runs first).
      firstReports[engine.name] = first;
      if (engine.name === 'postgres' && firstReports.sqlite) expect(first).toEqual(firstReports.sqlite);
      const afterFirst = await tables(db);
      for (const t of ['companies', 'job_search_results', 'jobs']) expect(afterFirst[t], t).toEqual(asRun[t]);
      expect(afterFirst['tasks']!.find((t) => t['id'] === post!.taskId)).toMatchObject({ status: 'failed', last_error_code: 'SCHEMA' });

      // The contract fix (a test cannot make one): the stored body becomes one the contract reads.
      await db.run(`UPDATE raw_responses SET body = ? WHERE id = ?`, original, post!.id);
      const fixed = await reprocessDatabase(db.locator, { batchSize: 7 });
      expect(fixed).toMatchObject({ invalid: 1, stillRejected: 0, recovered: 1, tasksRecovered: 1 });
      const afterFix = await tables(db);
      const [{ receivedAt }] = (await db.rows<{ receivedAt: string }>('SELECT received_at AS "receivedAt" FROM raw_responses WHERE id = ?', post!.id)) as [{ receivedAt: string }];
      expect(afterFix['tasks']!.find((t) => t['id'] === post!.taskId)).toMatchObject({ status: 'done', last_error_code: null, completed_at: receivedAt });
      expect(await db.rows('SELECT error_code FROM raw_responses WHERE id = ?', post!.id)).toEqual([{ error_code: null }]);
      // Every normalized row is what the run stored, rebuilt from its bodies alone; so are the tasks and anomalies.
      for (const t of Object.keys(WRITTEN)) if (t !== 'tasks') expect(afterFix[t], t).toEqual(asRun[t]);
      await db.run(`DELETE FROM raw_responses WHERE operation = 'no-such-operation'`);
    }, 60_000);

    it('is refused (exit 4, LockedError) while a run holds the dataset, changing nothing; then goes ahead and lets go', async () => {
      await db.run(`UPDATE companies SET name = 'tampered' WHERE url = (SELECT min(url) FROM companies)`);
      const release = await holdAsRun(db);
      try {
        await expect(reprocessDatabase(db.locator)).rejects.toBeInstanceOf(LockedError);
        const cli = await inProcess(['reprocess', '--db', db.locator]);
        expect(cli.code).toBe(EXIT.locked);
        expect(cli.stderr).toMatch(/is in use by (a running `netingest run`|run |netingest with no run id)/);
        expect(cli.stderr).toContain(engine.name === 'sqlite' ? db.locator : new URL(db.locator).pathname);
        expect(await db.count(`SELECT count(*) FROM companies WHERE name = 'tampered'`)).toBe(1);
      } finally {
        await release();
      }
      const done = await inProcess(['reprocess', '--db', db.locator, '--json']);
      expect(done.code, done.stderr).toBe(EXIT.ok);
      expect(JSON.parse(done.stdout)).toMatchObject({ invalid: 0, rebuiltFromScratch: true });
      expect(await db.count(`SELECT count(*) FROM companies WHERE name = 'tampered'`)).toBe(0);
      expect(await locksLeft(engine, db)).toBe(0);
    });

    it.runIf(engine.name === 'postgres')('(PostgreSQL) names no password, and NETINGEST_DATABASE_URL names the dataset as --db does', async () => {
      const release = await holdAsRun(db);
      try {
        const withPassword = new URL(db.locator);
        withPassword.password = 's3cret-pw';
        const cli = await inProcess(['reprocess', '--db', withPassword.toString()]);
        expect(cli.code).toBe(EXIT.locked);
        expect(cli.stdout + cli.stderr).not.toContain('s3cret-pw');
        expect((await inProcess(['reprocess'], { NETINGEST_DATABASE_URL: db.locator })).code).toBe(EXIT.locked);
      } finally {
        await release();
      }
      expect((await inProcess(['reprocess', '--json'], { NETINGEST_DATABASE_URL: db.locator })).code).toBe(EXIT.ok);
    });

    it('leaves the old dataset whole when it fails mid-way, and lets go of the lock', async () => {
      await db.run(`UPDATE companies SET name = 'tampered' WHERE url = (SELECT min(url) FROM companies)`);
      const before = await tables(db);
      expect(before['companies']!.length).toBeGreaterThan(0);
      let seenWhenStopped = 0;
      const stop = (seen: number) => {
        // After some pages: the tables were emptied and part of the bodies written again, in the transaction.
        if (seen < 14) return;
        seenWhenStopped = seen;
        throw new Error('stopped mid-way');
      };
      await expect(reprocessDatabase(db.locator, { batchSize: 7, onProgress: stop })).rejects.toThrow('stopped mid-way');
      expect(seenWhenStopped).toBe(14);
      expect(await tables(db)).toEqual(before);
      expect(await locksLeft(engine, db)).toBe(0);
      await (await holdAsRun(db))();
    });

    it.runIf(engine.name === 'postgres')('(PostgreSQL) leaves the old dataset whole when killed mid-way (SIGKILL), and the server lets go of its lock', async () => {
      await db.run(`UPDATE companies SET name = 'tampered' WHERE url = (SELECT min(url) FROM companies)`);
      const before = await tables(db);
      expect(before['jobs']!.length).toBeGreaterThan(0);
      // A row of jobs held by another session: the rebuild, having emptied the tables before jobs, waits there to be killed.
      const blocker = new pg.Client({ connectionString: db.locator });
      await blocker.connect();
      try {
        await blocker.query('BEGIN');
        await blocker.query('SELECT 1 FROM jobs ORDER BY url LIMIT 1 FOR UPDATE');
        const cli = spawnCli(['reprocess', '--db', db.locator], { cwd: dir });
        const waiting = async () => (await db.count(`SELECT count(*) FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'netingest' AND wait_event_type = 'Lock'`)) > 0;
        await until(waiting, 'reprocess to wait on the held row');
        cli.child.kill('SIGKILL');
        expect((await cli.done).signal).toBe('SIGKILL');
      } finally {
        await blocker.query('ROLLBACK');
        await blocker.end();
      }
      await until(async () => (await locksLeft(engine, db)) === 0, 'the killed session to end');
      expect(await tables(db)).toEqual(before);
    });

    it('skips a body the database refuses, alone, and keeps the rest of the rebuild', async () => {
      const [first] = await db.rows<{ id: number; url: string }>(`SELECT id, request_key AS url FROM raw_responses WHERE operation = 'post-details' ORDER BY id LIMIT 1`);
      const [{ postId }] = (await db.rows<{ postId: string }>(`SELECT post_id AS "postId" FROM posts WHERE url = ?`, first!.url)) as [{ postId: string }];
      expect(postId).toBeTruthy();
      // A rule the database checks, not the code: only a savepoint per body keeps the transaction going past it.
      const allow = await refusePost(engine, db, postId);
      try {
        const report = await reprocessDatabase(db.locator);
        expect(report).toMatchObject({ invalid: 1, replayed: report.responses - 1 });
        expect(report.rejected).toEqual([expect.objectContaining({ id: Number(first!.id), reason: expect.stringMatching(/test_refused/) })]);
        expect(await db.count('SELECT count(*) FROM posts')).toBeGreaterThan(0);
      } finally {
        await allow();
      }
      expect((await reprocessDatabase(db.locator)).invalid).toBe(0);
    });

    it('after a prune (raw_pruned_at), replays the kept bodies over the tables, keeping the rows of a dropped body', async () => {
      const [dropped] = await db.rows<{ id: number; url: string }>(`SELECT id, request_key AS url FROM raw_responses WHERE operation = 'post-details' ORDER BY id LIMIT 1`);
      const asKept = await tables(db, NORMALIZED);
      await db.run(`DELETE FROM raw_responses WHERE id = ?`, dropped!.id);
      await db.run(`INSERT INTO netingest_meta (key, value) VALUES ('raw_pruned_at', '2026-11-25T10:00:00.000Z')`);
      await db.run(`UPDATE companies SET name = 'tampered'`);
      const report = await reprocessDatabase(db.locator, { batchSize: 7 });
      expect(report).toMatchObject({ rebuiltFromScratch: false, rowsDeleted: 0, invalid: 0, responses: await db.count('SELECT count(*) FROM raw_responses') });
      const after = await tables(db, NORMALIZED);
      expect(after['posts']!.some((p) => p['url'] === dropped!.url)).toBe(true);
      expect(after['companies']!.some((c) => c['name'] === 'tampered')).toBe(false);
      expect(after).toEqual(asKept);
    });
  });
});

/** Resolves once `check` holds, polling (it asks the server); rejects after 30 s. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (const end = Date.now() + 30_000; !(await check()); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
