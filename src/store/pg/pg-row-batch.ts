/**
 * A group's rows in a few multi-row statements, as if written one by one: parents first, a key's n-th write in the n-th
 * statement (ON CONFLICT cannot touch a row twice), so later values win. Readers of a touched row flush first.
 */
import type pg from 'pg';
import type { Row, RowWrite } from '../../operations/stored-rows.ts';
import { NORMALIZED_TABLES } from '../ingest/index.ts';
import { pgValueConverters } from '../copy-dataset.ts';
import { onConflict, TABLE_WRITES } from '../ingest/tables.ts';
import { pipelineStatements, valuesStatements, type BoundStatement } from './pg-pipeline.ts';

export const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** Parents before children (NORMALIZED_TABLES lists children first, the order to empty them in). */
const WRITE_ORDER: readonly string[] = [...NORMALIZED_TABLES].reverse();

type ReplacedSet = { owner: Row; rows: readonly Row[] };

/** One table's writes waiting: upserted rows in order, or sets by owner (the last replacement of each). */
type Pending = { kind: 'rows'; rows: Row[] } | { kind: 'sets'; sets: Map<string, ReplacedSet> };

export class PgRowBatch {
  private pending = new Map<string, Pending>();

  /** Adds one write; a table that switches between upserts and set replacement is flushed first, to keep order. */
  async add(client: pg.ClientBase, w: RowWrite): Promise<void> {
    const kind = 'row' in w ? 'rows' : 'sets';
    if ((this.pending.get(w.table)?.kind ?? kind) !== kind) await this.flush(client);
    let p = this.pending.get(w.table);
    if (!p) this.pending.set(w.table, (p = kind === 'rows' ? { kind, rows: [] } : { kind, sets: new Map() }));
    if ('row' in w) (p as Extract<Pending, { kind: 'rows' }>).rows.push(w.row);
    else {
      const sets = (p as Extract<Pending, { kind: 'sets' }>).sets;
      const id = keyText(w.owner, Object.keys(w.owner));
      sets.delete(id); // the last replacement of an owner's set is the one kept
      sets.set(id, { owner: w.owner, rows: w.rows });
    }
  }

  /** Whether a waiting write may change the stored row of `table` that `key` finds. */
  touches(table: string, key: Row): boolean {
    const p = this.pending.get(table);
    if (!p) return false;
    const matches = (row: Row) => Object.keys(key).every((k) => !Object.hasOwn(row, k) || row[k] === key[k]);
    if (p.kind === 'rows') return p.rows.some(matches);
    return [...p.sets.values()].some((s) => matches(s.owner) || s.rows.some(matches));
  }

  /** Writes everything waiting in one round trip, inside the caller's open transaction (BEGIN already sent). */
  async flush(client: pg.ClientBase): Promise<void> {
    await pipelineStatements(client, this.take());
  }

  /** The statements that write everything waiting, parents first, in order; the batch is then empty. */
  take(): BoundStatement[] {
    const pending = this.pending;
    this.pending = new Map();
    const tables = [...pending.keys()].sort((a, b) => orderOf(a) - orderOf(b));
    return tables.flatMap((table) => {
      const p = pending.get(table)!;
      return p.kind === 'rows' ? upsertStatements(table, p.rows) : replaceSetStatements(table, [...p.sets.values()]);
    });
  }
}

function orderOf(table: string): number {
  const i = WRITE_ORDER.indexOf(table);
  return i === -1 ? WRITE_ORDER.length : i;
}

/** A key's values as one string (bigint-safe), for telling rows of the same key apart. */
function keyText(row: Row, columns: readonly string[]): string {
  return columns.map((c) => `${typeof row[c]}:${String(row[c])}`).join('\0');
}

/** Rows in statements of distinct keys: the n-th row of a key in the n-th statement. */
export function roundsByKey<T>(items: readonly T[], keyOf: (item: T) => string): T[][] {
  const seen = new Map<string, number>();
  const rounds: T[][] = [];
  for (const item of items) {
    const id = keyOf(item);
    const n = seen.get(id) ?? 0;
    seen.set(id, n + 1);
    (rounds[n] ??= []).push(item);
  }
  return rounds;
}

/**
 * The upserts of `rows`, one statement per round of distinct conflict keys, each in key order: workers upserting the
 * same rows (a company two answers name) then take their locks in one order and wait for each other, never deadlock.
 */
function upsertStatements(table: string, rows: readonly Row[]): BoundStatement[] {
  const s = tableStatementOf(table);
  const key = s.conflictKey;
  if (!key) return valuesStatements(s.head, rows.map((row) => paramsOf(s, row)), s.tail);
  const keyed = rows.map((row) => ({ row, id: keyText(row, key) }));
  return roundsByKey(keyed, (k) => k.id).flatMap((round) => valuesStatements(s.head, round.sort(byId).map((k) => paramsOf(s, k.row)), s.tail));
}

/** A total order of keys, the same in every worker (code units, not the locale's). */
function byId(a: { id: string }, b: { id: string }): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Each owner's stored set deleted (one statement), then the sets inserted. */
function replaceSetStatements(table: string, sets: readonly ReplacedSet[]): BoundStatement[] {
  const columns = Object.keys(sets[0]!.owner);
  const sameOwnerColumns = sets.every((s) => keyText(s.owner, Object.keys(s.owner)) === keyText(s.owner, columns));
  if (!sameOwnerColumns || !columns.every((c) => IDENTIFIER.test(c)) || !IDENTIFIER.test(table)) throw new Error(`internal: cannot delete from ${table}`);
  // Owners in key order, as upserts go (above): their stored sets are deleted in one order by every worker.
  sets = sets.map((set) => ({ set, id: keyText(set.owner, columns) })).sort(byId).map((k) => k.set);
  let n = 0;
  const owners = sets.map(() => `(${columns.map(() => `$${++n}`).join(', ')})`);
  const deleted = { text: `DELETE FROM ${table} WHERE (${columns.join(', ')}) IN (${owners.join(', ')})`, values: sets.flatMap((s) => columns.map((c) => s.owner[c])) };
  return [deleted, ...upsertStatements(table, sets.flatMap((s) => s.rows))];
}

interface PgTableStatement {
  table: string;
  columns: readonly string[];
  convert: Array<(value: unknown) => unknown>;
  /** `INSERT INTO table (columns)`, before the VALUES. */
  head: string;
  /** What follows the VALUES: the ON CONFLICT clause, or nothing (a set's plain insert). */
  tail: string;
  /** The ON CONFLICT columns: rows with the same values here are the same stored row. null: a plain insert. */
  conflictKey: readonly string[] | null;
}

const statements = new Map<string, PgTableStatement>();

/**
 * store/ingest/tables.ts's writes for PostgreSQL: `head VALUES (...), (...) tail`, LEAST/GREATEST for min/max, values
 * as `copy` converts them.
 */
function tableStatementOf(table: string): PgTableStatement {
  const known = statements.get(table);
  if (known) return known;
  const w = Object.hasOwn(TABLE_WRITES, table) ? TABLE_WRITES[table as keyof typeof TABLE_WRITES] : undefined;
  if (!w) throw new Error(`internal: no statement for table ${table}`);
  const converters = pgValueConverters(table);
  // The stored column named by its table: bare, it is ambiguous beside `excluded`.
  const merge = {
    new: (c: string) => `excluded.${c}`,
    earliest: (c: string) => `LEAST(${table}.${c}, excluded.${c})`,
    latest: (c: string) => `GREATEST(${table}.${c}, excluded.${c})`,
  };
  const s: PgTableStatement = {
    table,
    columns: w.columns,
    convert: w.columns.map((c) => converters.get(c) ?? ((v) => v)),
    head: `INSERT INTO ${table} (${w.columns.join(', ')})`,
    tail: onConflict(w, merge),
    conflictKey: w.conflictKey,
  };
  statements.set(table, s);
  return s;
}

/** A row's parameters in the statement's column order. */
function paramsOf(s: PgTableStatement, row: Row): unknown[] {
  return s.columns.map((column, i) => {
    const value = row[column];
    if (value === undefined) throw new Error(`internal: row of ${s.table} without ${column}`);
    if (typeof value !== 'bigint') return s.convert[i]!(value);
    // A bigint (object_urn, ids past 2^53) goes as its digits, which every numeric column and jsonb read as that number.
    return Number.isSafeInteger(Number(value)) ? s.convert[i]!(Number(value)) : value.toString();
  });
}
