/**
 * Opening a dataset, on both engines through the store every command uses (openStore: a run's openRun, a reader's
 * read): a database holding another program's tables and one a newer netingest migrated are refused, for a run
 * and for a reader alike, with the same codes, and nothing is added to them. The engines' own cases (SQLite's
 * file errors, PostgreSQL's pool, roles and concurrent migrations) stay in test/unit/db-open.test.ts and
 * test/pg/pg-store-open.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.ts';
import { knownMigrations } from '../../src/store/migration-state.ts';
import { PG_MIGRATIONS_FOLDER } from '../../src/store/pg/open.ts';
import { forEachEngine, type TestDb, type TestEngine } from './engines.ts';

const dir = mkdtempSync(join(tmpdir(), 'netingest-dataset-open-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let datasets = 0;

/** Engine-specific: how many tables the database holds (SQLite's catalogue, PostgreSQL's public schema). */
function tableCount(engine: TestEngine, db: TestDb): Promise<number> {
  return engine.name === 'sqlite'
    ? db.count(`SELECT count(*) FROM sqlite_master WHERE type = 'table'`)
    : db.count(`SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`);
}

/** The error code of opening `db` for a run, and of opening it for reading. */
async function refusals(db: TestDb): Promise<{ run: unknown; read: unknown }> {
  const store = await openStore(db.locator);
  const code = (err: unknown) => (err as { code?: unknown }).code;
  const run = await store.openRun({}).then(async (opened) => {
    await opened.hold.release();
    await opened.close();
    return 'opened';
  }, code);
  const read = await store.read(async () => 'read').catch(code);
  return { run, read };
}

// Each case its own dataset: run at once.
forEachEngine('opening a dataset', (engine) => {
  it.concurrent("refuses another program's tables, for a run and for a reader, and adds no table to them", async () => {
    const db = await engine.openEmpty(dir, `foreign-${++datasets}.db`);
    await db.run('CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)');
    expect(await refusals(db)).toEqual({ run: 'DB_NOT_NETINGEST', read: 'DB_NOT_NETINGEST' });
    expect(await tableCount(engine, db)).toBe(1);
  });

  it.concurrent('refuses a dataset a newer netingest migrated (an applied migration it does not know), for a run and for a reader', async () => {
    const db = await engine.open(dir, `newer-${++datasets}.db`);
    await db.create();
    const future = knownMigrations().at(-1)!.folderMillis + 86_400_000;
    await db.run('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)', 'f'.repeat(64), future);
    expect(await refusals(db)).toEqual({ run: 'DB_TOO_NEW', read: 'DB_TOO_NEW' });
  });

  it.concurrent('upgrades in place a dataset its last migrations are missing from (others recorded twice): a reader is refused until a run opens it', async () => {
    const db = await engine.open(dir, `older-${++datasets}.db`);
    await db.create();
    // What the last two migrations of both engines did, undone, and their records gone: the dataset of the release
    // before them (PostgreSQL's last, account_balance.credits_counted_from, first).
    if (engine.name === 'postgres') {
      await db.run('ALTER TABLE account_balance DROP COLUMN credits_counted_from');
      await db.run('DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)');
    }
    await db.run('ALTER TABLE runs DROP COLUMN refresh');
    await db.run('ALTER TABLE job_search_results DROP COLUMN page');
    for (let i = 0; i < 2; i++) await db.run('DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)');
    // A run it recorded: whether it was a --refresh is unknown (null), so no later --refresh resumes it.
    const at = '2026-11-01T00:00:00.000Z';
    await db.run(`INSERT INTO runs (jobs, started_at, ended_at, status) VALUES ('["q"]', ?, ?, 'abandoned')`, at, at);
    // Results it stored: the upgrade gives each the page an earlier release took it for (position / 10, from 1).
    await db.run('INSERT INTO job_searches (search_key, first_seen_at, last_seen_at) VALUES (?, ?, ?)', 'q', at, at);
    for (const [n, position] of [[1, 0], [2, 9], [3, 10]] as const) {
      await db.run('INSERT INTO jobs (url, first_seen_at, updated_at) VALUES (?, ?, ?)', `job-${n}`, at, at);
      await db.run('INSERT INTO job_search_results (search_key, job_url, position, first_seen_at, last_seen_at) VALUES (?, ?, ?, ?, ?)', 'q', `job-${n}`, position, at, at);
    }
    // Records twice (by hand, or a crash of an old release): as many rows as this build knows, yet some missing.
    for (let i = 0; i < (engine.name === 'postgres' ? 3 : 2); i++) await db.run('INSERT INTO __drizzle_migrations (hash, created_at) SELECT hash, created_at FROM __drizzle_migrations WHERE created_at = (SELECT min(created_at) FROM __drizzle_migrations) LIMIT 1');
    const store = await openStore(db.locator);
    // SQLite upgrades a file as it reads it (a reader of a PostgreSQL dataset may be a read-only role).
    if (engine.name === 'postgres') expect(await store.read(async () => 'read').catch((err: { code?: unknown }) => err.code)).toBe('DB_NEEDS_MIGRATION');
    const opened = await store.openRun({});
    await opened.hold.release();
    await opened.close();
    expect(await db.count('SELECT count(DISTINCT hash) FROM __drizzle_migrations')).toBe(knownMigrations(engine.name === 'sqlite' ? undefined : PG_MIGRATIONS_FOLDER).length);
    expect(await store.read(async () => 'read')).toBe('read');
    expect(await db.count(engine.name === 'sqlite' ? `SELECT count(*) FROM pragma_table_info('job_search_results') WHERE name = 'page'`
      : `SELECT count(*) FROM information_schema.columns WHERE table_name = 'job_search_results' AND column_name = 'page'`)).toBe(1);
    expect(await db.rows('SELECT job_url, page FROM job_search_results ORDER BY job_url')).toEqual([1, 1, 2].map((page, i) => ({ job_url: `job-${i + 1}`, page })));
    expect(await db.rows('SELECT status, refresh FROM runs')).toEqual([{ status: 'abandoned', refresh: null }]);
  });
});
