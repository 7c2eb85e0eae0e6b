/**
 * How each table is written: an upsert keeps the earliest first_seen_at and latest updated_at/last_seen_at, so replay
 * order cannot move them back; a set replaces its owner's. PostgreSQL's: pg/pg-row-batch.ts.
 */
import { specOf, type AnySubject } from '../../operations/index.ts';
import { MAX_URL_LENGTH, networkHost } from '../../urls/canonical.ts';
import type { ListPage, Row, RowContext, StoredAnswer } from '../../operations/stored-rows.ts';
import { primaryKeyOf, type TableDef } from '../table-kit.ts';
import { DATASET_TABLES, type NormalizedTable } from '../tables.ts';

/** How an upsert sets a column of the stored row: the new value, or the earlier or later of the two. */
export type Merge = 'new' | 'earliest' | 'latest';

export interface TableWrite {
  table: NormalizedTable;
  /** Every column, in the definition's order: what a row binds. */
  columns: readonly string[];
  /** The primary key an upsert conflicts on; null: a set's plain insert. */
  conflictKey: readonly string[] | null;
  /** What an upsert sets on conflict: each column but the key's. */
  updates: ReadonlyArray<{ column: string; merge: Merge }>;
  /** The columns of its indexes but the key's: their text is held to MAX_INDEXED_TEXT_BYTES. */
  indexed: readonly string[];
}

const MERGES: Readonly<Record<string, Merge>> = { first_seen_at: 'earliest', updated_at: 'latest', last_seen_at: 'latest' };

export const TABLE_WRITES = Object.fromEntries(
  DATASET_TABLES.flatMap((def): Array<[string, TableWrite]> => {
    if (def.written === undefined) return [];
    const columns = Object.keys(def.columns);
    const key = def.written === 'upsert' ? primaryKeyOf(def) : null;
    const updates = key ? columns.filter((c) => !key.includes(c)).map((column) => ({ column, merge: MERGES[column] ?? 'new' })) : [];
    return [[def.name, { table: def.name as NormalizedTable, columns, conflictKey: key, updates, indexed: indexedColumns(def) }]];
  }),
) as Readonly<Record<NormalizedTable, TableWrite>>;

function indexedColumns(def: TableDef): string[] {
  const key = primaryKeyOf(def);
  const on = Object.values(def.indexes ?? {}).flatMap((spec): readonly string[] => ('on' in spec ? spec.on : spec));
  return [...new Set(on)].filter((c) => !key.includes(c));
}

/** The most UTF-8 bytes an indexed column's text keeps: the URL's bound, for the same index (past it: NULL on both engines). */
const MAX_INDEXED_TEXT_BYTES = MAX_URL_LENGTH;

/** An answer's rows as both engines store them: its operation's, with indexable() applied. */
export function answerRows(subject: AnySubject, answer: unknown, ctx: RowContext): StoredAnswer {
  return indexable(specOf(subject.operation).rows(subject, answer, ctx));
}

/** An answer's rows with each indexed column's text past MAX_INDEXED_TEXT_BYTES as NULL; the same rows when none is. */
function indexable(stored: StoredAnswer): StoredAnswer {
  const fits = (table: NormalizedTable, row: Row) => TABLE_WRITES[table].indexed.every((c) => !overlong(row[c]));
  if (stored.writes.every((w) => ('row' in w ? fits(w.table, w.row) : w.rows.every((r) => fits(w.table, r))))) return stored;
  const fit = (table: NormalizedTable, row: Row): Row =>
    Object.fromEntries(Object.entries(row).map(([c, v]) => [c, TABLE_WRITES[table].indexed.includes(c) && overlong(v) ? null : v]));
  const writes = stored.writes.map((w) => ('row' in w ? { ...w, row: fit(w.table, w.row) } : { ...w, rows: w.rows.map((r) => fit(w.table, r)) }));
  return { ...stored, writes: writes as StoredAnswer['writes'] };
}

/** The page of a paged list `subject` asks for (undefined for an operation of no list): the history's, for a page with no row. */
export function listPageOf(subject: AnySubject, host: string = networkHost()): ListPage | undefined {
  return specOf(subject.operation).listPage?.(subject, host);
}

/** The value, or NULL for text past MAX_INDEXED_TEXT_BYTES (copy's rule for a dataset written before it). */
export const fitsIndex = (value: unknown): unknown => (overlong(value) ? null : value);

/** Three UTF-8 bytes a UTF-16 unit at most: a shorter string is not counted. */
function overlong(value: unknown): boolean {
  return typeof value === 'string' && value.length * 3 > MAX_INDEXED_TEXT_BYTES && Buffer.byteLength(value) > MAX_INDEXED_TEXT_BYTES;
}

/** ` ON CONFLICT (key) DO UPDATE SET ...` in a dialect's words for each merge; '' for a plain insert. */
export function onConflict(w: TableWrite, merge: Readonly<Record<Merge, (column: string) => string>>): string {
  if (!w.conflictKey) return '';
  return ` ON CONFLICT (${w.conflictKey.join(', ')}) DO UPDATE SET ${w.updates.map((u) => `${u.column} = ${merge[u.merge](u.column)}`).join(', ')}`;
}

const SQLITE_MERGE = {
  new: (c: string) => `excluded.${c}`,
  earliest: (c: string) => `min(${c}, excluded.${c})`,
  latest: (c: string) => `max(${c}, excluded.${c})`,
};

/** Every normalized table's SQLite statement and the columns it binds, in order, by name. */
export const TABLE_STATEMENTS = Object.fromEntries(
  Object.values(TABLE_WRITES).map((w) => [
    w.table,
    { columns: w.columns, sql: `INSERT INTO ${w.table} (${w.columns.join(', ')}) VALUES (${w.columns.map(() => '?').join(', ')})${onConflict(w, SQLITE_MERGE)}` },
  ]),
);
