/**
 * How a table is defined once for both engines: columns of a neutral kind (what each kind becomes on SQLite and
 * on PostgreSQL is decided by the two builders, schema.ts and pg/schema.ts), keys, indexes and checks by name.
 * The definitions themselves are in tables.ts.
 */
import type { AnyColumn, SQL } from 'drizzle-orm';

/**
 * A column's kind, and so its type on each engine (docs/postgres.md): `text`; `time`, an ISO-8601 UTC timestamp
 * (text / timestamptz); `json`, JSON text (text / jsonb); `int`; `bigint`, an id or a reference to one, or a
 * number past 2^31 (integer / bigint); `flag`, 0/1 (integer / smallint); `real` (real / double precision);
 * `given`, a value of undocumented type kept as given (BLOB without affinity / jsonb).
 */
export type ColumnKind = 'text' | 'time' | 'json' | 'int' | 'bigint' | 'flag' | 'real' | 'given';

/**
 * An id the engine numbers itself: SQLite AUTOINCREMENT, PostgreSQL identity BY DEFAULT (so `copy` keeps the ids)
 * or ALWAYS (PostgreSQL-only tables); false for every other column.
 */
export type AutoId = false | 'byDefault' | 'always';

/** The values a kind holds. */
export type DataOf<K extends ColumnKind> = K extends 'int' | 'bigint' | 'flag' | 'real' ? number : K extends 'given' ? string | number : string;

export interface ColumnSpec {
  readonly kind: ColumnKind;
  readonly notNull: boolean;
  readonly default?: string | number | SQL;
  readonly primaryKey: boolean;
  readonly autoId: AutoId;
  /** The parent column; a child row goes with its parent (ON DELETE CASCADE), as every reference in the dataset. */
  readonly references?: Column;
}

/** A column definition; its type parameters are what drizzle infers rows from ($inferInsert). */
export class Column<K extends ColumnKind = ColumnKind, T = DataOf<K>, N extends boolean = boolean, D extends boolean = boolean> {
  declare readonly types: { kind: K; data: T; notNull: N; hasDefault: D };
  readonly spec: ColumnSpec;

  constructor(spec: ColumnSpec) {
    this.spec = spec;
  }

  notNull(): Column<K, T, true, D> {
    return new Column({ ...this.spec, notNull: true });
  }

  default(value: (T & (string | number)) | SQL): Column<K, T, N, true> {
    return new Column({ ...this.spec, default: value });
  }

  primaryKey(): Column<K, T, true, D> {
    return new Column({ ...this.spec, notNull: true, primaryKey: true });
  }

  autoId(mode: Exclude<AutoId, false> = 'byDefault'): Column<K, T, true, true> {
    return new Column({ ...this.spec, notNull: true, primaryKey: true, autoId: mode });
  }

  references(parent: Column): Column<K, T, N, D> {
    return new Column({ ...this.spec, references: parent });
  }

  /** Narrows the values (a status column's closed union). */
  $type<U extends T>(): Column<K, U, N, D> {
    return new Column(this.spec);
  }
}

const kind = <K extends ColumnKind>(k: K) => (): Column<K, DataOf<K>, false, false> => new Column({ kind: k, notNull: false, primaryKey: false, autoId: false });

export const text = kind('text');
export const time = kind('time');
export const json = kind('json');
export const int = kind('int');
export const bigint = kind('bigint');
export const flag = kind('flag');
export const real = kind('real');
export const given = kind('given');

export type Columns = Record<string, Column>;
type Names<C extends Columns> = readonly (keyof C & string)[];

/** An index: its columns, or its columns with `unique` and a `where` (a partial index). */
export type IndexSpec<C extends Columns> = Names<C> | { on: Names<C>; unique?: boolean; where?(t: Record<keyof C & string, AnyColumn>): SQL };

/** How the operations' rows are written: upserted on the primary key, or as sets that replace an owner's rows. */
export type WriteMode = 'upsert' | 'set';

export interface TableOptions<C extends Columns, W extends WriteMode | undefined> {
  /** A key over several columns (one column's is its own primaryKey()). */
  readonly primaryKey?: Names<C>;
  readonly indexes?: Readonly<Record<string, IndexSpec<C>>>;
  /** CHECK constraints by name. */
  checks?(t: Record<keyof C & string, AnyColumn>): Readonly<Record<string, SQL>>;
  /** Set for the normalized tables the operations' rows go to (store/ingest/tables.ts). */
  readonly written?: W;
}

/** A table's definition; its keys and indexes name its columns as plain strings (table() checked them). */
export interface TableDef<Name extends string = string, C extends Columns = Columns, W extends WriteMode | undefined = WriteMode | undefined>
  extends TableOptions<Columns, W> {
  readonly name: Name;
  readonly columns: C;
}

export function table<Name extends string, C extends Columns, W extends WriteMode | undefined = undefined>(
  name: Name,
  columns: C,
  options: TableOptions<C, W> = {},
): TableDef<Name, C, W> {
  return { name, columns, ...options };
}

/** The columns of `def` that make its primary key, in key order. */
export function primaryKeyOf(def: TableDef): readonly string[] {
  return def.primaryKey ?? Object.keys(def.columns).filter((c) => def.columns[c]!.spec.primaryKey);
}

/** A dialect's drizzle column builder, as buildTables() chains it (drizzle's builders return themselves). */
export interface ColumnBuilder {
  notNull(): ColumnBuilder;
  default(value: unknown): ColumnBuilder;
  primaryKey(): ColumnBuilder;
  references(ref: () => AnyColumn, actions: { onDelete: 'cascade' }): ColumnBuilder;
}

/** What buildTables() needs of a dialect: its drizzle functions, and each kind's column. */
export interface Dialect {
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
    const { on, unique, where } = isNames(spec) ? { on: spec, unique: false, where: undefined } : spec;
    const index = (unique ? dialect.uniqueIndex : dialect.index)(name).on(...on.map((c) => t[c]!));
    extras.push(where ? index.where(where(t)) : index);
  }
  for (const [name, condition] of Object.entries(def.checks?.(t) ?? {})) extras.push(dialect.check(name, condition));
  return extras;
}

function isNames(spec: IndexSpec<Columns>): spec is Names<Columns> {
  return Array.isArray(spec);
}
