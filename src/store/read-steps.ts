/**
 * A reader written once for both engines: a generator that yields its statements (SQLite's SQL, `?`
 * placeholders, which PostgreSQL also runs: see pgRows) and gets each one's rows back, run synchronously on a
 * SQLite connection (readSync: the run's own callers, inside its transactions) or awaited on a PostgreSQL
 * snapshot (readPg). The logic between the statements (replaying credits, walking the runs) is not duplicated.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { pgRows, type PgSnapshot } from './pg/read-snapshot.ts';

/** One statement to run, and its parameters. */
export interface ReadStep {
  sql: string;
  params: readonly unknown[];
}

/** A reader: yields statements, receives their rows, returns its answer. */
export type Reads<T> = Generator<ReadStep, T, Array<Record<string, unknown>>>;

/** The rows of `sql` (inside a Reads generator: `const r = yield* rows(...)`). */
export function* rows<R>(sql: string, params: readonly unknown[] = []): Generator<ReadStep, R[], Array<Record<string, unknown>>> {
  return (yield { sql, params }) as R[];
}

/** The first column of the first row, or undefined without rows (better-sqlite3's pluck().get()). */
export function* value<T>(sql: string, params: readonly unknown[] = []): Generator<ReadStep, T | undefined, Array<Record<string, unknown>>> {
  const found = yield* rows<Record<string, unknown>>(sql, params);
  return found.length === 0 ? undefined : (Object.values(found[0]!)[0] as T);
}

/** Runs `reads` on a SQLite connection, synchronously. */
export function readSync<T>(sqlite: BetterSqlite3.Database, reads: Reads<T>): T {
  for (let step = reads.next(); ; ) {
    if (step.done) return step.value;
    step = reads.next(sqlite.prepare(step.value.sql).all(...step.value.params) as Array<Record<string, unknown>>);
  }
}

/** Runs `reads` in a PostgreSQL snapshot. */
export async function readPg<T>(snapshot: PgSnapshot, reads: Reads<T>): Promise<T> {
  for (let step = reads.next(); ; ) {
    if (step.done) return step.value;
    step = reads.next(await pgRows<Record<string, unknown>>(snapshot, step.value.sql, step.value.params));
  }
}
