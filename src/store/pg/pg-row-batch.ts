/**
 * A group's rows in a few multi-row statements, as if written one by one: parents first, a key's n-th write in the n-th
 * statement (ON CONFLICT cannot touch a row twice), so later values win. Readers of a touched row flush first.
 */
import type pg from 'pg';
import type { Row, RowWrite } from '../../operations/stored-rows.ts';
import { NORMALIZED_TABLES } from '../ingest/index.ts';
import { paramsOf, tableStatementOf } from './pg-table-statements.ts';
import { pipelineStatements } from './pg-pipeline.ts';
import { valuesStatements, type BoundStatement } from './pg-statements.ts';

export const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** Parents before children (NORMALIZED_TABLES lists children first, the order to empty them in). */
const WRITE_ORDER: readonly string[] = [...NORMALIZED_TABLES].reverse();

interface ReplacedSet {
  owner: Row;
  rows: readonly Row[];
}

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
