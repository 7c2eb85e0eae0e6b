/** One dialect's drizzle tables from tables.ts' definitions; apart from table-kit.ts so that the definitions' types need no drizzle. */
import type { AnyColumn, SQL } from 'drizzle-orm';
import type { AutoId, Column, ColumnKind, ColumnSpec, Columns, Engine, IndexSpec, Names, TableDef } from './table-kit.ts';

/** A dialect's drizzle column builder, as buildTables() chains it (drizzle's builders return themselves). */
export interface ColumnBuilder {
  notNull(): ColumnBuilder;
  default(value: unknown): ColumnBuilder;
  primaryKey(): ColumnBuilder;
  references(ref: () => AnyColumn, actions: { onDelete: 'cascade' }): ColumnBuilder;
}

/** What buildTables() needs of a dialect: its drizzle functions, and each kind's column. */
export interface Dialect {
  /** Which engine: an index built on one engine only (IndexSpec's `only`) is left out of the other's. */
  engine: Engine;
  /** A column of `kind`; with `autoId`, the key column the engine numbers. */
  column(kind: ColumnKind, autoId: AutoId): ColumnBuilder;
  table(name: string, columns: Record<string, ColumnBuilder>, extra: (t: Record<string, AnyColumn>) => unknown[]): Record<string, AnyColumn>;
  index(name: string): { on(...columns: AnyColumn[]): { where(condition: SQL): unknown } };
  uniqueIndex(name: string): { on(...columns: AnyColumn[]): { where(condition: SQL): unknown } };
  primaryKey(config: { columns: AnyColumn[] }): unknown;
  check(name: string, condition: SQL): unknown;
}

/** One dialect's drizzle tables from their definitions (parents first, so a reference finds its parent built). */
export function buildTables(defs: readonly TableDef[], dialect: Dialect): Record<string, unknown> {
  const built = new Map<Column, AnyColumn>();
  const tables: Record<string, unknown> = {};
  for (const def of defs) {
    const columns = Object.fromEntries(Object.entries(def.columns).map(([key, c]) => [key, buildColumn(c.spec, dialect, built)]));
    const t = dialect.table(def.name, columns, (t) => extrasOf(def, t, dialect));
    for (const [key, c] of Object.entries(def.columns)) built.set(c, t[key]!);
    tables[def.name] = t;
  }
  return tables;
}

function buildColumn(spec: ColumnSpec, dialect: Dialect, built: ReadonlyMap<Column, AnyColumn>): ColumnBuilder {
  let b = dialect.column(spec.kind, spec.autoId);
  if (spec.primaryKey && !spec.autoId) b = b.primaryKey();
  else if (spec.notNull && !spec.primaryKey) b = b.notNull();
  if (spec.default !== undefined) b = b.default(spec.default);
  const parent = spec.references;
  if (parent) b = b.references(() => built.get(parent)!, { onDelete: 'cascade' });
  return b;
}

function extrasOf(def: TableDef, t: Record<string, AnyColumn>, dialect: Dialect): unknown[] {
  const extras: unknown[] = def.primaryKey ? [dialect.primaryKey({ columns: def.primaryKey.map((c) => t[c]!) })] : [];
  for (const [name, spec] of Object.entries(def.indexes ?? {})) {
    const { on, unique, where, only } = isNames(spec) ? { on: spec, unique: false, where: undefined, only: undefined } : spec;
    if (only !== undefined && only !== dialect.engine) continue;
    const index = (unique ? dialect.uniqueIndex : dialect.index)(name).on(...on.map((c) => t[c]!));
    // The fragments are drizzle's own (sql`...`), typed opaquely in table-kit.ts.
    extras.push(where ? index.where(where(t) as SQL) : index);
  }
  for (const [name, condition] of Object.entries(def.checks?.(t) ?? {})) extras.push(dialect.check(name, condition as SQL));
  return extras;
}

function isNames(spec: IndexSpec<Columns>): spec is Names<Columns> {
  return Array.isArray(spec);
}
