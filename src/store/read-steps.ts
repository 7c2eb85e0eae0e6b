/**
 * A reader written once for both engines: a generator yielding statements and given their rows, run synchronously on
 * SQLite (readSync) or awaited on PostgreSQL (readPg). A Statement carries each engine's text: none is rewritten here.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import type { PgSnapshot } from './pg/read-snapshot.ts';

export { answered, rawRows, rows, value, type EngineSql, type ReadStep, type Reads, type StepParams } from '../statement.ts';
import { pgValues, type Reads, type ReadStep } from '../statement.ts';

/** Statements prepared once per connection: a reader may run one per input row (enrich). */
const prepared = new WeakMap<BetterSqlite3.Database, Map<string, BetterSqlite3.Statement>>();

export function readSync<T>(sqlite: BetterSqlite3.Database, reads: Reads<T>): T {
  let cache = prepared.get(sqlite);
  if (!cache) prepared.set(sqlite, (cache = new Map()));
  for (let step = reads.next(); ; ) {
    if (step.done) return step.value;
    const { sql, params, raw } = step.value;
    const text = typeof sql === 'string' ? sql : sql.sqlite;
    let stmt = cache.get(text);
    if (!stmt) cache.set(text, (stmt = sqlite.prepare(text)));
    const bound = Array.isArray(params) ? params : [params];
    // A statement returning nothing (an UPDATE) runs and gives no rows, as on PostgreSQL.
    if (!stmt.reader) stmt.run(...bound);
    step = reads.next(stmt.reader ? (raw ? stmt.raw(true) : stmt.raw(false)).all(...bound) : []);
  }
}

// PostgreSQL's value types, loaded on first use (SQLite readers must not load pg) and kept: the writer reads once per
// answer, and each import() goes through the module loader.
type PgValueTypes = typeof import('./pg/reader-values.ts');
let valueTypes: Promise<PgValueTypes> | null = null;
const pgValueTypes = () => (valueTypes ??= import('./pg/reader-values.ts'));

/** A statement as node-postgres sends it: values bound, rows as arrays (raw) or objects, parsed by `types`. */
export interface PgStatement {
  text: string;
  values: unknown[];
  rowMode?: 'array';
  types: pg.CustomTypesConfig;
}

/** Runs `reads` on a client in the caller's transaction (the writer's), or on the pool (each statement on its own). */
export async function readPg<T>(snapshot: Pick<PgSnapshot, 'client'> | { client: pg.ClientBase | pg.Pool }, reads: Reads<T>): Promise<T> {
  const types = await pgValueTypes();
  for (let step = reads.next(); ; ) {
    if (step.done) return step.value;
    step = reads.next((await snapshot.client.query(pgStatement(step.value, types))).rows);
  }
}

/** A reader's step as PostgreSQL runs it: its text, values, and rows as arrays (raw) or objects by column. */
export function pgStatement(step: ReadStep, { READER_TYPES, STORE_TYPES }: Pick<PgValueTypes, 'READER_TYPES' | 'STORE_TYPES'>): PgStatement {
  const { sql, params, raw } = step;
  // Plain text takes no parameter (the types say so; a caller around them would get PostgreSQL's error late).
  if (typeof sql === 'string' && (Array.isArray(params) ? params.length > 0 : Object.keys(params).length > 0)) throw new Error(`internal: parameters for a plain statement: ${sql}`);
  const text = typeof sql === 'string' ? sql : sql.postgres;
  const values = typeof sql === 'string' ? [] : pgValues(sql, params);
  return raw ? { text, values, rowMode: 'array', types: READER_TYPES } : { text, values, types: STORE_TYPES };
}
