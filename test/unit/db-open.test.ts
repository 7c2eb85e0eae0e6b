import BetterSqlite3 from 'better-sqlite3';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, toDatabaseError, type Database } from '../../src/store/open.ts';
import { DatabaseError } from '../../src/store/errors.ts';
import { BUSY_TIMEOUT_ENV, busyTimeoutMs } from '../../src/store/connection.ts';
import { NetingestError } from '../../src/errors.ts';
import { MIGRATIONS_FOLDER, knownMigrations } from '../../src/store/migration-state.ts';

let dir: string;
const opened: Database[] = [];
function open(file: string, options?: Parameters<typeof openDatabase>[1]): Database {
  const d = openDatabase(file, options);
  opened.push(d);
  return d;
}
function openError(file: string, options?: Parameters<typeof openDatabase>[1]): DatabaseError {
  try {
    open(file, options);
  } catch (err) {
    expect(err).toBeInstanceOf(DatabaseError);
    expect(err).toBeInstanceOf(NetingestError);
    return err as DatabaseError;
  }
  throw new Error('expected openDatabase to throw');
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-db-open-'));
});
afterEach(() => {
  for (const d of opened.splice(0)) d.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('openDatabase', () => {
  it('creates missing folders, applies every migration and sets the connection up', () => {
    const file = join(dir, 'nested', 'deeper', 'netingest.db');
    const d = open(file);
    expect(d.file).toBe(file);
    const tables = d.sqlite.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).pluck().all();
    for (const t of ['companies', 'company_locations', 'company_industries', 'company_specialities', 'company_hashtags',
      'similar_companies', 'posts', 'post_media', 'jobs', 'job_searches', 'job_search_results', 'runs', 'tasks',
      'invalid_inputs', 'api_calls', 'raw_responses', 'run_lock', 'netingest_meta']) {
      expect(tables).toContain(t);
    }
    expect(d.sqlite.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(d.sqlite.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(d.sqlite.pragma('synchronous', { simple: true })).toBe(1); // NORMAL
    expect(d.sqlite.pragma('busy_timeout', { simple: true })).toBe(5000);
    const applied = d.sqlite.prepare('SELECT count(*) FROM __drizzle_migrations').pluck().get();
    expect(applied).toBe(knownMigrations().length);
    const version = d.sqlite.prepare(`SELECT value FROM netingest_meta WHERE key = 'schema_version'`).pluck().get();
    expect(version).toBe(String(knownMigrations().at(-1)!.folderMillis));
  });

  it('reopens an up-to-date file without re-applying migrations, whatever the cwd', () => {
    const file = join(dir, 'a.db');
    open(file).close();
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const d = open('a.db', { busyTimeoutMs: 250 });
      expect(d.sqlite.prepare('SELECT count(*) FROM __drizzle_migrations').pluck().get()).toBe(knownMigrations().length);
      expect(d.sqlite.pragma('busy_timeout', { simple: true })).toBe(250);
    } finally {
      process.chdir(cwd);
    }
  });

  it('waits NETINGEST_SQLITE_BUSY_SECONDS for a lock when the caller sets no busy timeout; a bad value is a usage error', () => {
    expect(busyTimeoutMs({})).toBe(5000);
    expect(busyTimeoutMs({ [BUSY_TIMEOUT_ENV]: ' 2 ' })).toBe(2000);
    for (const bad of ['0.5', 'soon']) expect(() => busyTimeoutMs({ [BUSY_TIMEOUT_ENV]: bad })).toThrow(/NETINGEST_SQLITE_BUSY_SECONDS must be a number of seconds/);
    process.env[BUSY_TIMEOUT_ENV] = '2';
    try {
      expect(open(join(dir, 'env.db')).sqlite.pragma('busy_timeout', { simple: true })).toBe(2000);
      expect(open(join(dir, 'env.db'), { busyTimeoutMs: 250 }).sqlite.pragma('busy_timeout', { simple: true })).toBe(250);
    } finally {
      delete process.env[BUSY_TIMEOUT_ENV];
    }
  });

  it('refuses a file a newer netingest migrated with DB_TOO_NEW, naming the migrations it does not know', () => {
    const file = join(dir, 'newer.db');
    open(file).close();
    const raw = new BetterSqlite3(file);
    raw.prepare(`INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('abcdef0123456789abcdef', 4102444800000)`).run();
    raw.close();
    const err = openError(file);
    expect(err.code).toBe('DB_TOO_NEW');
    expect(err.message).toBe(`database ${file} was created or upgraded by a newer version of netingest (unknown migrations: ` +
      '2100-01-01T00:00:00.000Z (abcdef012345)); upgrade netingest to use it');
  });

  it('refuses a file that is not a SQLite database with DB_CORRUPT', () => {
    const file = join(dir, 'notes.db');
    writeFileSync(file, 'company_url\nhttps://network.com/company/acme\n'.repeat(200));
    const err = openError(file);
    expect(err.code).toBe('DB_CORRUPT');
    expect(err.message).toContain(file);
    expect(openError(file, { readonly: true }).code).toBe('DB_CORRUPT');
  });

  it('read-only mode: reads a migrated file, cannot write, does not create or migrate', () => {
    const file = join(dir, 'ro.db');
    open(file).close();
    const ro = open(file, { readonly: true });
    expect(ro.sqlite.readonly).toBe(true);
    expect(ro.sqlite.prepare('SELECT count(*) FROM companies').pluck().get()).toBe(0);
    expect(() => ro.sqlite.prepare(`INSERT INTO netingest_meta (key, value) VALUES ('x', 'y')`).run()).toThrow(/readonly/);

    expect(openError(join(dir, 'missing', 'x.db'), { readonly: true }).code).toBe('DB_NOT_FOUND');

    const blank = join(dir, 'blank.db');
    new BetterSqlite3(blank).close();
    const err = openError(blank, { readonly: true });
    expect(err.code).toBe('DB_NEEDS_MIGRATION');
    expect(err.message).toMatch(/holds no netingest tables .* a read-only command does not create them/);
    expect(err.message).not.toMatch(/upgrad/);
  });

  it('reports a file locked by another connection as DB_LOCKED', () => {
    const file = join(dir, 'locked.db');
    const holder = new BetterSqlite3(file);
    holder.exec('BEGIN EXCLUSIVE');
    holder.exec('CREATE TABLE __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)');
    try {
      const err = openError(file, { busyTimeoutMs: 50 });
      expect(err.code).toBe('DB_LOCKED');
      expect(err.message).toMatch(/locked by another process/);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
  });

  it.skipIf(process.getuid?.() === 0)('reports a read-only file as DB_READONLY', () => {
    const file = join(dir, 'perm.db');
    new BetterSqlite3(file).close(); // an empty file that needs migrating
    chmodSync(file, 0o444);
    chmodSync(dir, 0o555);
    try {
      expect(openError(file).code).toBe('DB_READONLY');
    } finally {
      chmodSync(dir, 0o755);
    }
  });

  it('maps a real SQLITE_READONLY failure to DB_READONLY (works as root too)', () => {
    const file = join(dir, 'ro-map.db');
    open(file).close();
    const ro = new BetterSqlite3(file, { readonly: true });
    let mapped: unknown;
    try {
      ro.exec(`INSERT INTO netingest_meta (key, value) VALUES ('x', 'y')`);
    } catch (err) {
      mapped = toDatabaseError(err, file, 5000);
    } finally {
      ro.close();
    }
    expect(mapped).toBeInstanceOf(DatabaseError);
    expect((mapped as DatabaseError).code).toBe('DB_READONLY');
  });

});

describe('a file an older netingest wrote, opened by a read-only command', () => {
  /** A migrations folder holding all but the last of this build's migrations: the schema an older build wrote. */
  function olderMigrations(): string {
    const folder = join(dir, 'older-migrations');
    mkdirSync(join(folder, 'meta'), { recursive: true });
    const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: Array<{ tag: string }> };
    journal.entries.pop();
    for (const { tag } of journal.entries) copyFileSync(join(MIGRATIONS_FOLDER, `${tag}.sql`), join(folder, `${tag}.sql`));
    writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify(journal));
    return folder;
  }
  const columns = (d: Database) => (d.sqlite.prepare(`SELECT name FROM pragma_table_info('raw_responses')`).pluck().all() as string[]);

  it('is upgraded first with upgradeOlderSchema (as status, plan, query, export and enrich open it), then read', () => {
    const file = join(dir, 'older.db');
    open(file, { migrationsFolder: olderMigrations() }).close();
    expect(openError(file, { readonly: true }).code).toBe('DB_NEEDS_MIGRATION');

    const ro = open(file, { readonly: true, upgradeOlderSchema: true });
    expect(ro.sqlite.readonly).toBe(true);
    expect(columns(ro)).toContain('error_code');
  });

  it('a blank file is still refused, and left blank', () => {
    const blank = join(dir, 'blank.db');
    new BetterSqlite3(blank).close();
    expect(openError(blank, { readonly: true, upgradeOlderSchema: true }).code).toBe('DB_NEEDS_MIGRATION');
    const check = new BetterSqlite3(blank);
    expect(check.prepare(`SELECT count(*) FROM sqlite_master`).pluck().get()).toBe(0);
    check.close();
  });

  it('when the upgrade cannot be written (another process holds the file), says why', () => {
    const file = join(dir, 'busy.db');
    open(file, { migrationsFolder: olderMigrations() }).close();
    const holder = new BetterSqlite3(file);
    holder.exec('BEGIN EXCLUSIVE');
    try {
      const err = openError(file, { readonly: true, upgradeOlderSchema: true, busyTimeoutMs: 50 });
      expect(err.code).toBe('DB_NEEDS_MIGRATION');
      expect(err.message).toMatch(/older netingest and must be upgraded .* upgrading it failed: .*locked by another process/);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
  });
});
