/**
 * A reader written once for both engines: a generator that yields its statements and gets each one's rows
 * back, run synchronously on a SQLite connection (readSync: the run's own callers, inside its transactions) or
 * awaited on a PostgreSQL snapshot (readPg). The logic between the statements (replaying credits, walking the
 * runs, an input's latest answers) is not duplicated. A statement is SQLite's SQL, which PostgreSQL runs as it
 * is (`?` and `@name` placeholders are numbered for it), or one text per engine where the dialects differ.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import type { PgSnapshot } from './pg/read-snapshot.ts';

export { answered, rawRows, rows, value, type EngineSql, type ReadStep, type Reads, type StepParams } from '../read-steps.ts';
import type { Reads, StepParams } from '../read-steps.ts';

/** Statements prepared once per connection: a reader may run one per input row (enrich). */
const prepared = new WeakMap<BetterSqlite3.Database, Map<string, BetterSqlite3.Statement>>();

/** Runs `reads` on a SQLite connection, synchronously. */
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
    step = reads.next((raw ? stmt.raw(true) : stmt.raw(false)).all(...bound));
  }
}

/**
 * PostgreSQL's value types, loaded on first use (the SQLite readers beside the PostgreSQL ones must not load pg)
 * and kept: an import() per read went through the module loader each time (under tsx, a message to its thread
 * and a wait), and the writer reads once per answer.
 */
let valueTypes: Promise<typeof import('./pg/reader-values.ts')> | null = null;
const pgValueTypes = () => (valueTypes ??= import('./pg/reader-values.ts'));

/** Runs `reads` in a PostgreSQL snapshot, or on a client in a transaction of the caller's (the writer's). */
export async function readPg<T>(snapshot: Pick<PgSnapshot, 'client'> | { client: pg.ClientBase }, reads: Reads<T>): Promise<T> {
  const { READER_TYPES, STORE_TYPES } = await pgValueTypes();
  for (let step = reads.next(); ; ) {
    if (step.done) return step.value;
    const { sql, params, raw } = step.value;
    const { text, values } = numbered(typeof sql === 'string' ? sql : sql.postgres, params);
    const result = raw
      ? await snapshot.client.query({ text, values, rowMode: 'array', types: READER_TYPES })
      : await snapshot.client.query({ text, values, types: STORE_TYPES });
    step = reads.next(result.rows);
  }
}

/** `?` and `@name` as PostgreSQL's `$1`, `$2`... (none of these statements has either in a literal). */
function numbered(sql: string, params: StepParams): { text: string; values: unknown[] } {
  if (Array.isArray(params)) {
    let n = 0;
    return { text: sql.replace(/\?/g, () => `$${++n}`), values: [...params] };
  }
  const names: string[] = [];
  const text = sql.replace(/@([A-Za-z_]\w*)/g, (_, name: string) => {
    if (!names.includes(name)) names.push(name);
    return `$${names.indexOf(name) + 1}`;
  });
  const named = params as Readonly<Record<string, unknown>>;
  return { text, values: names.map((name) => named[name]) };
}
