/**
 * Running one test body on both engines: `forEachEngine` declares a describe block per engine (PostgreSQL's
 * skipped with the one-line reason where no server can run), and `engine.open(dir)` gives the `--db` value of a
 * new dataset with engine-neutral reads of it. Tests written against it say a promise once and check it twice.
 */
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe } from 'vitest';
import { registerRawBodyFunction } from '../../src/store/raw-body.ts';
import { openDatabase } from '../../src/store/open.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { inProcess } from '../support/run-helpers.ts';
import { firstNumber, pgRows, SQLITE_LIKE_TYPES } from '../support/sql-reads.ts';
import { newMigratedPgDatabase, newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

/** A dataset a test runs into, read the same way on both engines. */
export interface TestDb {
  /** What `--db` (or runJobs' dbPath) takes: the file, or the postgres:// URL. */
  locator: string;
  /** The rows of `sql` (`?` placeholders; SQL both engines read), values as SQLite gives them (AS_SQLITE). */
  rows<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T[]>;
  /** The first column of the first row, as a number (count(*), sum(...)). */
  count(sql: string, ...params: unknown[]): Promise<number>;
  /** Runs one writing statement (`?` placeholders), outside netingest's code: a fixture's or a test's own change. */
  run(sql: string, ...params: unknown[]): Promise<void>;
  /** Makes the dataset with this build's schema (as a run's opening would), empty. */
  create(): Promise<void>;
  /** Task counts by status for a job. */
  taskStatuses(job: string): Promise<Record<string, number>>;
  /**
   * All the dataset holds, as text to search for a secret: the SQLite file and its WAL byte for byte, or every
   * value of every table of PostgreSQL's schema cast to text (bodies are text there; jsonb shows its strings).
   */
  everything(): Promise<Array<{ where: string; text: string }>>;
}

export interface TestEngine {
  name: 'sqlite' | 'postgres';
  /**
   * A new empty dataset (a SQLite one is the file `name` in `dir`, made by the first run; a PostgreSQL one is
   * already migrated); its reads end after the describe block.
   */
  open(dir: string, name?: string): Promise<TestDb>;
  /** As `open`, but a PostgreSQL database holds nothing at all (no netingest schema): for what opening one does. */
  openEmpty(dir: string, name?: string): Promise<TestDb>;
  /** As `open`, with this build's schema already made (a SQLite file exists): for cases that start at once. */
  created(dir: string, name?: string): Promise<TestDb>;
  /**
   * A new dataset holding what the SQLite file `file` holds: a copy of the file in `dir`, or on PostgreSQL a new
   * database `netingest copy` filled from it. Fixtures are built once, on SQLite, and read on both engines.
   */
  load(dir: string, file: string): Promise<TestDb>;
}

const pgPools: pg.Pool[] = [];

function withReads(locator: string, { rows, run, create, everything }: Pick<TestDb, 'rows' | 'run' | 'create' | 'everything'>): TestDb {
  const count: TestDb['count'] = async (sql, ...params) => firstNumber(await rows(sql, ...params));
  const taskStatuses: TestDb['taskStatuses'] = async (job) => {
    const out: Record<string, number> = {};
    for (const r of await rows<{ status: string; n: number }>('SELECT status, count(*) AS n FROM tasks WHERE job = ? GROUP BY status', job)) out[r.status] = r.n;
    return out;
  };
  return { locator, rows, run, create, count, taskStatuses, everything };
}

export const SQLITE: TestEngine = {
  name: 'sqlite',
  async open(dir, name = 'data.db') {
    const file = join(dir, name);
    const connected = <T>(readonly: boolean, use: (db: BetterSqlite3.Database) => T): T => {
      // A write may make the file (a fixture of another program's tables); a read never does.
      const db = new BetterSqlite3(file, { readonly, fileMustExist: readonly });
      registerRawBodyFunction(db);
      try {
        return use(db);
      } finally {
        db.close();
      }
    };
    // Reads made one after another in one turn of the event loop (a test reading every table) share a read-only
    // connection, closed at the next turn: one opened per statement parsed the schema again for each (~0.7 ms).
    let reader: BetterSqlite3.Database | undefined;
    const readOnly = (): BetterSqlite3.Database => {
      if (!reader) {
        const opened = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
        registerRawBodyFunction(opened);
        reader = opened;
        setImmediate(() => {
          reader = undefined;
          opened.close();
        });
      }
      return reader;
    };
    const rows = async <T>(sql: string, ...params: unknown[]) => readOnly().prepare(sql).all(...params) as T[];
    const run = async (sql: string, ...params: unknown[]) => void connected(false, (db) => db.prepare(sql).run(...params));
    const create = async () => openDatabase(file).close();
    const everything = async () => [file, `${file}-wal`].filter((f) => existsSync(f)).map((f) => ({ where: f, text: readFileSync(f).toString('latin1') }));
    return withReads(file, { rows, run, create, everything });
  },
  openEmpty(dir, name) {
    return SQLITE.open(dir, name);
  },
  created: (dir, name) => created(SQLITE, dir, name),
  async load(dir, file) {
    const name = `loaded-${++loaded}.db`;
    // The fixture was closed: its WAL is checkpointed into the file (copied as well in case it is not).
    for (const suffix of ['', '-wal']) if (existsSync(file + suffix)) copyFileSync(file + suffix, join(dir, name + suffix));
    return SQLITE.open(dir, name);
  },
};

let loaded = 0;

async function created(engine: TestEngine, dir: string, name?: string): Promise<TestDb> {
  const db = await engine.open(dir, name);
  await db.create();
  return db;
}

export const POSTGRES: TestEngine = {
  name: 'postgres',
  open: () => pgDataset(newMigratedPgDatabase('engines')),
  openEmpty: () => pgDataset(newPgDatabase('engines_empty')),
  created: (dir, name) => created(POSTGRES, dir, name),
  async load(dir, file) {
    const db = await POSTGRES.open(dir);
    const copied = await inProcess(['copy', '--from', file, '--to', db.locator]);
    if (copied.code !== 0) throw new Error(`netingest copy of ${file} failed: ${copied.stderr}`);
    return db;
  },
};

/** A PostgreSQL dataset's reads, on a database being made (`made`: its URL). */
async function pgDataset(made: Promise<string>): Promise<TestDb> {
  const url = await made;
  const pool = new pg.Pool({ connectionString: url, max: 2, types: SQLITE_LIKE_TYPES });
  pgPools.push(pool);
  const rows = async <T>(sql: string, ...params: unknown[]) => pgRows<T>(pool, sql, params);
  const everything = async () => {
    const columns = await rows<{ table: string; column: string }>(`SELECT table_name AS "table", column_name AS "column"
      FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name, ordinal_position`);
    const tables = new Map<string, typeof columns>();
    for (const c of columns) tables.set(c.table, [...(tables.get(c.table) ?? []), c]);
    const out: Array<{ where: string; text: string }> = [];
    for (const [table, cols] of tables) {
      const values = cols.map((c) => `coalesce(${pg.escapeIdentifier(c.column)}::text, '')`).join(` || E'\\n' || `);
      const found = await rows<{ text: string | null }>(`SELECT string_agg(${values}, E'\\n') AS text FROM ${pg.escapeIdentifier(table)}`);
      out.push({ where: `table ${table}`, text: found[0]?.text ?? '' });
    }
    return out;
  };
  const run = async (sql: string, ...params: unknown[]) => void (await rows(sql, ...params));
  const create = async () => (await openPgStore(url)).close();
  return withReads(url, { rows, run, create, everything });
}

/** Ends the PostgreSQL pools the test file opened (call in afterAll). */
export async function closeEngines(): Promise<void> {
  await Promise.all(pgPools.splice(0).map((p) => p.end()));
}

/** One describe block per engine, titled `title (engine)`; PostgreSQL's skipped, with the reason, without a server. */
export function forEachEngine(title: string, body: (engine: TestEngine) => void): void {
  describe(`${title} (sqlite)`, () => body(SQLITE));
  describe.skipIf(!pgClusterUrl)(`${title} (postgres)${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
    afterAll(closeEngines);
    body(POSTGRES);
  });
}
