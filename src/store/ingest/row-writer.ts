/**
 * Writes an answer's rows, one prepared statement per table, bound positionally; a derived column (posts.posted_on) is
 * computed right before its row. Runs inside the caller's transaction.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { Row, RowWrite } from '../../operations/stored-rows.ts';
import type { SqlValue } from '../../operations/stored-values.ts';
import { TABLE_STATEMENTS } from './tables.ts';

/** Columns the store fills from the row itself, by table. */
export type DerivedColumns = Readonly<Record<string, Readonly<Record<string, (row: Row) => SqlValue>>>>;

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** Prepares the statements once (lazily, per table); the returned function performs one write. */
export function prepareRowWriter(sqlite: BetterSqlite3.Database, derived: DerivedColumns): (write: RowWrite) => void {
  const writers = new Map<string, (row: Row) => void>();
  const deletes = new Map<string, { keys: readonly string[]; args: SqlValue[]; stmt: BetterSqlite3.Statement }>();

  const writerOf = (table: string): ((row: Row) => void) => {
    let writer = writers.get(table);
    if (writer) return writer;
    const statement = Object.hasOwn(TABLE_STATEMENTS, table) ? TABLE_STATEMENTS[table]! : undefined;
    if (!statement) throw new Error(`internal: no statement for table ${table}`);
    const stmt = sqlite.prepare(statement.sql);
    const columns = statement.columns;
    const derive = derived[table] ?? {};
    const derivers = columns.map((c) => (Object.hasOwn(derive, c) ? derive[c]! : null));
    // One argument array per table, refilled per row and spread into run(): separate arguments bind faster.
    const args: SqlValue[] = new Array<SqlValue>(columns.length);
    writer = (row) => {
      for (let i = 0; i < columns.length; i++) {
        const deriver = derivers[i];
        const value = deriver ? deriver(row) : row[columns[i]!];
        if (value === undefined) throw new Error(`internal: row of ${table} without ${columns[i]!}`);
        args[i] = value;
      }
      stmt.run(...args);
    };
    writers.set(table, writer);
    return writer;
  };

  // Per table, the owner columns of its sets (the same for every write) and one argument array, refilled.
  const deleteSet = (table: string, owner: Row): void => {
    let entry = deletes.get(table);
    if (!entry) {
      const keys = Object.keys(owner);
      if (!Object.hasOwn(TABLE_STATEMENTS, table) || !keys.every((k) => IDENTIFIER.test(k))) throw new Error(`internal: cannot delete from ${table} by ${keys.join(', ')}`);
      const stmt = sqlite.prepare(`DELETE FROM ${table} WHERE ${keys.map((k) => `${k} = ?`).join(' AND ')}`);
      deletes.set(table, (entry = { keys, args: new Array<SqlValue>(keys.length), stmt }));
    }
    const { keys, args, stmt } = entry;
    for (let i = 0; i < keys.length; i++) {
      const value = owner[keys[i]!];
      if (value === undefined) throw new Error(`internal: a set of ${table} owned by other columns than ${keys.join(', ')}`);
      args[i] = value;
    }
    stmt.run(...args);
  };

  return (write) => {
    if ('row' in write) {
      writerOf(write.table)(write.row);
      return;
    }
    deleteSet(write.table, write.owner);
    const writer = writerOf(write.table);
    for (const row of write.rows) writer(row);
  };
}

/** Prepares the lookup of one stored value by key columns (RowContext.stored). */
export function prepareStoredLookup(sqlite: BetterSqlite3.Database): (table: string, key: Row, column: string) => SqlValue | undefined {
  const statements = new Map<string, BetterSqlite3.Statement>();
  return (table, key, column) => {
    const keys = Object.keys(key);
    const id = `${table}\u0000${column}\u0000${keys.join(',')}`;
    let stmt = statements.get(id);
    if (!stmt) {
      if (![table, column, ...keys].every((n) => IDENTIFIER.test(n))) throw new Error(`internal: cannot read ${table}.${column}`);
      stmt = sqlite.prepare(`SELECT ${column} FROM ${table} WHERE ${keys.map((k) => `${k} = ?`).join(' AND ')}`).pluck();
      statements.set(id, stmt);
    }
    return stmt.get(Object.values(key)) as SqlValue | undefined;
  };
}

