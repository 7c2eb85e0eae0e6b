/**
 * A reader written once for both engines: a generator yielding its statements and getting their rows back
 * (store/read-steps.ts runs it). No database, so operations use it without importing the store.
 */
import type { Statement } from './statement.ts';

/** One statement's SQL: text alike on both engines and without parameters, or a Statement (each engine's text). */
export type EngineSql = string | Statement;

/** Positional parameters (`?`), or named ones (`@name`) in an object. */
export type StepParams = readonly unknown[] | Readonly<Record<string, unknown>>;

/** One statement to run, its parameters, and whether its rows come as arrays (raw) or objects by column. */
export interface ReadStep {
  sql: EngineSql;
  params: StepParams;
  raw?: boolean;
}

/** A reader: yields statements, receives their rows, returns its answer. */
export type Reads<T> = Generator<ReadStep, T, unknown[]>;

/** The rows of `sql` as objects by column (inside a Reads generator: `const r = yield* rows(...)`). */
export function rows<R>(sql: string): Reads<R[]>;
export function rows<R>(sql: Statement, params: StepParams): Reads<R[]>;
export function* rows<R>(sql: EngineSql, params: StepParams = []): Reads<R[]> {
  return (yield { sql, params }) as R[];
}

/** The rows of `sql` as arrays in column order. */
export function rawRows(sql: string): Reads<unknown[][]>;
export function rawRows(sql: Statement, params: StepParams): Reads<unknown[][]>;
export function* rawRows(sql: EngineSql, params: StepParams = []): Reads<unknown[][]> {
  return (yield { sql, params, raw: true }) as unknown[][];
}

/** The first column of the first row, or undefined without rows (better-sqlite3's pluck().get()). */
export function value<T>(sql: string): Reads<T | undefined>;
export function value<T>(sql: Statement, params: StepParams): Reads<T | undefined>;
export function* value<T>(sql: EngineSql, params: StepParams = []): Reads<T | undefined> {
  // By column, not raw: on PostgreSQL, counts come back as numbers that way (a raw row is an export's, bigint).
  const found = (yield { sql, params }) as Array<Record<string, unknown>>;
  return found.length === 0 ? undefined : (Object.values(found[0]!)[0] as T);
}

/** A reader that needs no statement: its answer at once (a lookup whose keys come from the input alone). */
export function answered<T>(answer: T): Reads<T> {
  // eslint-disable-next-line require-yield -- reads nothing, by design
  return (function* () {
    return answer;
  })();
}
