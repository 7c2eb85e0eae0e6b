/**
 * The shape of a dataset's schema as each engine reports it (tables, columns, keys, indexes, foreign keys,
 * views), and the differences between a SQLite and a PostgreSQL one under the documented type mapping.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import { DATASET_TABLES } from '../../src/store/tables.ts';

export interface ColumnShape {
  name: string;
  type: string;
  notNull: boolean;
  /** The default as SQL text, normalized ('pending', 0), or null. */
  default: string | null;
  /** An id the engine numbers itself (SQLite AUTOINCREMENT, PostgreSQL identity). */
  autoId: boolean;
}

export interface IndexShape {
  name: string;
  columns: string[];
  unique: boolean;
  partial: boolean;
}

export interface SchemaShape {
  tables: Record<string, { columns: ColumnShape[]; primaryKey: string[]; indexes: IndexShape[]; foreignKeys: string[] }>;
  views: Record<string, string[]>;
}

/** drizzle's own bookkeeping: a different table on each engine, and not part of the dataset. */
const IGNORED_TABLES = new Set(['__drizzle_migrations', 'sqlite_sequence']);

/**
 * Tables only PostgreSQL has, by design: how several workers share a job (src/store/pg/coordination/tables.ts:
 * task leases, the shared rate limit, the shared credit budget and its cost samples, which session works which
 * run). SQLite keeps its one-run lock instead.
 */
/**
 * The differences the definitions ask for: an index built on one engine only (IndexSpec's `only` in
 * src/store/tables.ts), as schemaDifferences words them.
 */
export function engineOnlyIndexes(): string[] {
  return DATASET_TABLES.flatMap((t) => Object.entries(t.indexes ?? {}).flatMap(([name, spec]) =>
    (!Array.isArray(spec) && 'only' in spec && spec.only ? [`index ${name} on ${t.name}: only on ${spec.only === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`] : [])));
}

export const PG_ONLY_COORDINATION_TABLES: readonly string[] = [
  'account_balance', 'credit_cost_samples', 'credit_reservations', 'credit_run_spend', 'rate_slots', 'worker_runs', 'worker_task_leases',
];

/**
 * The documented type mapping (docs/postgres.md): for a SQLite declared type, the PostgreSQL types a column may
 * have. A timestamp (`*_at`, `at`) must be timestamptz; the others choose among these.
 */
export const TYPE_MAPPING: Record<string, readonly string[]> = {
  integer: ['integer', 'bigint', 'smallint'],
  text: ['text', 'jsonb'],
  real: ['double precision'],
  blob: ['jsonb'],
};
const TIMESTAMP = 'timestamp with time zone';
const isTimestamp = (column: string) => column === 'at' || column.endsWith('_at');

function normalizeDefault(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return value.replace(/::[a-z ]+$/i, '').replace(/^'(.*)'$/, '$1');
}

export function sqliteShape(db: BetterSqlite3.Database): SchemaShape {
  const shape: SchemaShape = { tables: {}, views: {} };
  const objects = db.prepare("SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'").all() as Array<{ type: string; name: string; sql: string }>;
  for (const { type, name, sql } of objects) {
    if (IGNORED_TABLES.has(name)) continue;
    const info = db.prepare(`PRAGMA table_info("${name}")`).all() as Array<{ name: string; type: string; notnull: number; dflt_value: string | null; pk: number }>;
    if (type === 'view') {
      shape.views[name] = info.map((c) => c.name);
      continue;
    }
    const autoIncrement = /AUTOINCREMENT/i.test(sql);
    const indexes = (db.prepare(`PRAGMA index_list("${name}")`).all() as Array<{ name: string; unique: number; origin: string; partial: number }>)
      .filter((i) => i.origin !== 'pk')
      .map((i) => ({
        name: i.name,
        columns: (db.prepare(`PRAGMA index_info("${i.name}")`).all() as Array<{ name: string }>).map((c) => c.name),
        unique: i.unique === 1,
        partial: i.partial === 1,
      }));
    const foreignKeys = (db.prepare(`PRAGMA foreign_key_list("${name}")`).all() as Array<{ table: string; from: string; to: string; on_delete: string }>)
      .map((f) => `${f.from} -> ${f.table}.${f.to} on delete ${f.on_delete.toLowerCase()}`);
    shape.tables[name] = {
      columns: info.map((c) => ({
        name: c.name,
        type: c.type.toLowerCase(),
        // SQLite lets an INTEGER PRIMARY KEY be declared without NOT NULL; it is never null all the same.
        notNull: c.notnull === 1 || c.pk > 0,
        default: normalizeDefault(c.dflt_value),
        autoId: autoIncrement && c.pk === 1 && info.filter((x) => x.pk > 0).length === 1,
      })),
      primaryKey: info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name),
      indexes: indexes.sort((a, b) => a.name.localeCompare(b.name)),
      foreignKeys: foreignKeys.sort(),
    };
  }
  return shape;
}

export async function pgShape(client: pg.Client, schema = 'public'): Promise<SchemaShape> {
  const shape: SchemaShape = { tables: {}, views: {} };
  const columns = await client.query<{ table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null; is_identity: string; table_type: string }>(
    `SELECT c.table_name, c.column_name, c.data_type, c.is_nullable, c.column_default, c.is_identity, t.table_type
     FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
     WHERE c.table_schema = $1 ORDER BY c.table_name, c.ordinal_position`,
    [schema],
  );
  for (const c of columns.rows) {
    if (IGNORED_TABLES.has(c.table_name)) continue;
    if (c.table_type === 'VIEW') {
      (shape.views[c.table_name] ??= []).push(c.column_name);
      continue;
    }
    const table = (shape.tables[c.table_name] ??= { columns: [], primaryKey: [], indexes: [], foreignKeys: [] });
    table.columns.push({
      name: c.column_name,
      type: c.data_type,
      notNull: c.is_nullable === 'NO',
      default: normalizeDefault(c.column_default),
      autoId: c.is_identity === 'YES',
    });
  }
  const indexes = await client.query<{ table: string; name: string; columns: string[]; unique: boolean; primary: boolean; partial: boolean }>(
    `SELECT t.relname AS table, i.relname AS name, ix.indisunique AS unique, ix.indisprimary AS primary, ix.indpred IS NOT NULL AS partial,
       ARRAY(SELECT a.attname FROM unnest(ix.indkey) WITH ORDINALITY k(attnum, n) JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns
     FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid JOIN pg_namespace ns ON ns.oid = t.relnamespace
     WHERE ns.nspname = $1`,
    [schema],
  );
  for (const i of indexes.rows) {
    const table = shape.tables[i.table];
    if (!table) continue;
    if (i.primary) table.primaryKey = i.columns;
    else table.indexes.push({ name: i.name, columns: i.columns, unique: i.unique, partial: i.partial });
  }
  const foreignKeys = await client.query<{ table: string; from: string; ref: string; to: string; on_delete: string }>(
    `SELECT t.relname AS table, a.attname AS from, r.relname AS ref, ra.attname AS to,
       CASE c.confdeltype WHEN 'c' THEN 'cascade' WHEN 'a' THEN 'no action' WHEN 'r' THEN 'restrict' WHEN 'n' THEN 'set null' ELSE 'set default' END AS on_delete
     FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid JOIN pg_namespace ns ON ns.oid = t.relnamespace
     JOIN unnest(c.conkey, c.confkey) AS k(from_num, to_num) ON true
     JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.from_num JOIN pg_attribute ra ON ra.attrelid = r.oid AND ra.attnum = k.to_num
     WHERE c.contype = 'f' AND ns.nspname = $1`,
    [schema],
  );
  for (const f of foreignKeys.rows) shape.tables[f.table]?.foreignKeys.push(`${f.from} -> ${f.ref}.${f.to} on delete ${f.on_delete}`);
  for (const table of Object.values(shape.tables)) {
    table.indexes.sort((a, b) => a.name.localeCompare(b.name));
    table.foreignKeys.sort();
  }
  return shape;
}

/** Every way the PostgreSQL schema differs from the SQLite one; empty when they match. */
export function schemaDifferences(lite: SchemaShape, pgs: SchemaShape): string[] {
  const out: string[] = [];
  const names = (o: object) => Object.keys(o).sort();
  for (const t of names(lite.tables)) if (!pgs.tables[t]) out.push(`table ${t}: only on SQLite`);
  for (const t of names(pgs.tables)) {
    if (!lite.tables[t] && !PG_ONLY_COORDINATION_TABLES.includes(t)) out.push(`table ${t}: only on PostgreSQL`);
  }
  for (const t of names(lite.tables)) {
    const a = lite.tables[t]!;
    const b = pgs.tables[t];
    if (!b) continue;
    const bColumns = new Map(b.columns.map((c) => [c.name, c]));
    for (const c of a.columns) if (!bColumns.has(c.name)) out.push(`column ${t}.${c.name}: only on SQLite`);
    for (const c of b.columns) if (!a.columns.some((x) => x.name === c.name)) out.push(`column ${t}.${c.name}: only on PostgreSQL`);
    const order = (cs: ColumnShape[], other: Map<string, unknown>) => cs.filter((c) => other.has(c.name)).map((c) => c.name).join(', ');
    if (order(a.columns, bColumns) !== order(b.columns, new Map(a.columns.map((c) => [c.name, c])))) {
      out.push(`table ${t}: columns in another order (SQLite: ${a.columns.map((c) => c.name).join(', ')}; PostgreSQL: ${b.columns.map((c) => c.name).join(', ')})`);
    }
    for (const c of a.columns) {
      const d = bColumns.get(c.name);
      if (!d) continue;
      const allowed = isTimestamp(c.name) && c.type === 'text' ? [TIMESTAMP] : TYPE_MAPPING[c.type] ?? [];
      if (!allowed.includes(d.type)) out.push(`column ${t}.${c.name}: SQLite ${c.type} maps to ${allowed.join(' or ') || 'nothing'}, PostgreSQL has ${d.type}`);
      if (c.notNull !== d.notNull) out.push(`column ${t}.${c.name}: NOT NULL on ${c.notNull ? 'SQLite' : 'PostgreSQL'} only`);
      if (c.default !== d.default) out.push(`column ${t}.${c.name}: default ${c.default} on SQLite, ${d.default} on PostgreSQL`);
      if (c.autoId !== d.autoId) out.push(`column ${t}.${c.name}: numbered by the engine on ${c.autoId ? 'SQLite' : 'PostgreSQL'} only`);
    }
    if (a.primaryKey.join(',') !== b.primaryKey.join(',')) out.push(`table ${t}: primary key (${a.primaryKey}) on SQLite, (${b.primaryKey}) on PostgreSQL`);
    const show = (i: IndexShape) => `${i.unique ? 'unique ' : ''}${i.partial ? 'partial ' : ''}(${i.columns.join(', ')})`;
    const bIndexes = new Map(b.indexes.map((i) => [i.name, i]));
    for (const i of a.indexes) {
      const j = bIndexes.get(i.name);
      if (!j) out.push(`index ${i.name} on ${t}: only on SQLite`);
      else if (show(i) !== show(j)) out.push(`index ${i.name} on ${t}: ${show(i)} on SQLite, ${show(j)} on PostgreSQL`);
    }
    for (const j of b.indexes) if (!a.indexes.some((i) => i.name === j.name)) out.push(`index ${j.name} on ${t}: only on PostgreSQL`);
    if (a.foreignKeys.join('; ') !== b.foreignKeys.join('; ')) out.push(`table ${t}: foreign keys [${a.foreignKeys.join('; ')}] on SQLite, [${b.foreignKeys.join('; ')}] on PostgreSQL`);
  }
  for (const v of names(lite.views)) if (!pgs.views[v]) out.push(`view ${v}: only on SQLite`);
  for (const v of names(pgs.views)) if (!lite.views[v]) out.push(`view ${v}: only on PostgreSQL`);
  for (const v of names(lite.views)) {
    const b = pgs.views[v];
    if (b && lite.views[v]!.join(', ') !== b.join(', ')) out.push(`view ${v}: columns (${lite.views[v]!.join(', ')}) on SQLite, (${b.join(', ')}) on PostgreSQL`);
  }
  return out;
}
