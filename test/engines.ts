/**
 * Running one test body on both engines: `forEachEngine` declares a describe block per engine (PostgreSQL's
 * skipped with the one-line reason where no server can run), and `engine.open(dir)` gives the `--db` value of a
 * new dataset with engine-neutral reads of it. Tests written against it say a promise once and check it twice.
 */
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe } from 'vitest';
import { registerRawBodyFunction } from '../src/store/raw-body.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './pg/use-pg.ts';

/** A dataset a test runs into, read the same way on both engines. */
export interface TestDb {
  /** What `--db` (or runJobs' dbPath) takes: the file, or the postgres:// URL. */
  locator: string;
  /** The rows of `sql` (`?` placeholders; SQL both engines read). bigint counts come back as numbers. */
  rows<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T[]>;
  /** The first column of the first row, as a number (count(*), sum(...)). */
  count(sql: string, ...params: unknown[]): Promise<number>;
  /** Task counts by status for a job. */
  taskStatuses(job: string): Promise<Record<string, number>>;
}

export interface TestEngine {
  name: 'sqlite' | 'postgres';
  /** A new empty dataset (a SQLite one is the file `name` in `dir`); its reads end after the describe block. */
  open(dir: string, name?: string): Promise<TestDb>;
}

const pgPools: pg.Pool[] = [];

/** node-postgres gives int8 (count(*), bigint ids) as strings: read them as numbers, as SQLite gives them. */
const NUMERIC_INT8: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

function withReads(locator: string, rows: TestDb['rows']): TestDb {
  const count: TestDb['count'] = async (sql, ...params) => Number(Object.values((await rows(sql, ...params))[0] ?? {})[0] ?? 0);
  const taskStatuses: TestDb['taskStatuses'] = async (job) => {
    const out: Record<string, number> = {};
    for (const r of await rows<{ status: string; n: number }>('SELECT status, count(*) AS n FROM tasks WHERE job = ? GROUP BY status', job)) out[r.status] = r.n;
    return out;
  };
  return { locator, rows, count, taskStatuses };
}

export const SQLITE: TestEngine = {
  name: 'sqlite',
  async open(dir, name = 'data.db') {
    const file = join(dir, name);
    return withReads(file, async <T>(sql: string, ...params: unknown[]) => {
      const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
      registerRawBodyFunction(db);
      try {
        return db.prepare(sql).all(...params) as T[];
      } finally {
        db.close();
      }
    });
  },
};

export const POSTGRES: TestEngine = {
  name: 'postgres',
  async open() {
    const url = await newPgDatabase('engines');
    const pool = new pg.Pool({ connectionString: url, max: 2, types: NUMERIC_INT8 });
    pgPools.push(pool);
    return withReads(url, async <T>(sql: string, ...params: unknown[]) => {
      let n = 0;
      return (await pool.query(sql.replace(/\?/g, () => `$${++n}`), params)).rows as T[];
    });
  },
};

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
