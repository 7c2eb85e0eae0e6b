/** What an answer stores: plain rows by public table and column names, mapped by pure functions, so any store can write them its own way. */
import type { AnswerAnomalyKind, DatasetTable, NormalizedTable, StoreFilled } from '../store/tables.ts';
import type { SqlValue } from './stored-values.ts';

export type Row = Readonly<Record<string, SqlValue>>;

type Filled<T> = T extends keyof StoreFilled ? StoreFilled[T] : never;

/** Column names of table `T`, from its one definition: no drizzle type, so the package's types need none. */
type ColumnsOf<T extends NormalizedTable> = keyof Extract<DatasetTable, { name: T }>['columns'] & string;

/** A row of `T`: every column but those the store fills (optional), so a misspelt or forgotten one does not compile. */
export type RowOf<T extends NormalizedTable> = { readonly [K in Exclude<ColumnsOf<T>, Filled<T>>]-?: SqlValue } & {
  readonly [K in Filled<T>]?: SqlValue;
};

/** One write, in order: a row upserted (the store knows each table's key and first/last-seen merge), or rows replacing all `owner` had there. */
export type RowWrite = {
  [T in NormalizedTable]: { table: T; row: RowOf<T> } | { table: T; owner: Row; rows: readonly RowOf<T>[] };
}[NormalizedTable];

/** A page of a paged list as its rows name it (the list's key columns and the page), whether or not it lists anyone. */
export interface ListPage { table: NormalizedTable; row: Row }

/** Something an answer held that was not stored as asked (answer_anomalies). */
export interface RowAnomaly {
  kind: AnswerAnomalyKind;
  position: number | null;
  path: string | null;
  reason: string;
  askedId: string | null;
  answeredId: string | null;
}

/** An answer's rows, in the order they are written. */
export interface StoredAnswer {
  writes: RowWrite[];
  /** Records left out because they carry no URL or id to key them by. */
  skipped: number;
  anomalies: RowAnomaly[];
}

/** What the row mapping may know of the dataset and the time. */
export interface RowContext {
  /** ISO-8601 UTC time the answer was received: every first/last-seen column of its rows. */
  seenAt: string;
  /** The network's host (urls/canonical.ts), read once per store. */
  networkHost: string;
  /** A stored row's column, found by its key columns; undefined when there is no such row. */
  stored(table: string, key: Row, column: string): SqlValue | undefined;
}

/** Rows written by an answer (upserts and inserts; the deletes of a replaced set are not counted). */
export function rowCount(answer: StoredAnswer): number {
  return answer.writes.reduce((n, w) => n + ('row' in w ? 1 : w.rows.length), 0);
}
