/**
 * How a table is defined once for both engines: columns of a neutral kind (schema.ts and pg/schema.ts decide what
 * each becomes), keys, indexes and checks by name. tables.ts holds the definitions; table-build.ts builds them.
 */

/**
 * A drizzle SQL fragment (a default, a check, a partial index's condition), opaque here: the package's public types
 * reach these, and drizzle's own declarations fail a strict consumer's check (skipLibCheck false).
 */
export interface SqlFragment {
  getSQL(): unknown;
}

/** A built column, as a check or a partial index names it inside sql`...` (drizzle's column: see table-build.ts). */
export type ColumnRef = object;

/**
 * A column's kind, typed on SQLite / PostgreSQL (docs/postgres.md): `text`; `time`, ISO-8601 UTC (text / timestamptz);
 * `json` (text / jsonb); `int`; `bigint`, an id, a reference to one, or past 2^31 (integer / bigint); `flag`, 0/1
 * (integer / smallint); `real` (real / double precision); `given`, of undocumented type (BLOB without affinity / jsonb).
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
  readonly default?: string | number | SqlFragment;
  readonly primaryKey: boolean;
  readonly autoId: AutoId;
  /** The parent column; a child row goes with its parent (ON DELETE CASCADE), as every reference in the dataset. */
  readonly references?: Column;
}

/** A column definition; its type parameters are what SelectOf reads a row's types from. */
export class Column<K extends ColumnKind = ColumnKind, T = DataOf<K>, N extends boolean = boolean> {
  declare readonly types: { kind: K; data: T; notNull: N };
  readonly spec: ColumnSpec;

  constructor(spec: ColumnSpec) {
    this.spec = spec;
  }

  notNull(): Column<K, T, true> {
    return new Column({ ...this.spec, notNull: true });
  }

  default(value: (T & (string | number)) | SqlFragment): Column<K, T, N> {
    return new Column({ ...this.spec, default: value });
  }

  primaryKey(): Column<K, T, true> {
    return new Column({ ...this.spec, notNull: true, primaryKey: true });
  }

  autoId(mode: Exclude<AutoId, false> = 'byDefault'): Column<K, T, true> {
    return new Column({ ...this.spec, notNull: true, primaryKey: true, autoId: mode });
  }

  references(parent: Column): Column<K, T, N> {
    return new Column({ ...this.spec, references: parent });
  }

  /** Narrows the values (a status column's closed union). */
  $type<U extends T>(): Column<K, U, N> {
    return new Column(this.spec);
  }
}

const kind = <K extends ColumnKind>(k: K) => (): Column<K, DataOf<K>, false> => new Column({ kind: k, notNull: false, primaryKey: false, autoId: false });

export const text = kind('text');
export const time = kind('time');
export const json = kind('json');
export const int = kind('int');
export const bigint = kind('bigint');
export const flag = kind('flag');
export const real = kind('real');
export const given = kind('given');

export type Columns = Record<string, Column>;

/** A row of `Def` as read back, null where a column allows it: drizzle's $inferSelect, without drizzle's types. */
export type SelectOf<Def extends TableDef> = {
  [K in keyof Def['columns']]: Def['columns'][K] extends Column<ColumnKind, infer T, infer N> ? (N extends true ? T : T | null) : never;
};
export type Names<C extends Columns> = readonly (keyof C & string)[];

/**
 * An index: its columns, or its columns with `unique`, a `where` (a partial index) and `only`: built on that engine
 * alone (where the other pays more for it than it gives: see tasks_job_status_idx).
 */
export type IndexSpec<C extends Columns> = Names<C> | { on: Names<C>; unique?: boolean; where?(t: Record<keyof C & string, ColumnRef>): SqlFragment; only?: Engine };

export type Engine = 'sqlite' | 'postgres';

/** How the operations' rows are written: upserted on the primary key, or as sets that replace an owner's rows. */
export type WriteMode = 'upsert' | 'set';

export interface TableOptions<C extends Columns, W extends WriteMode | undefined> {
  /** A key over several columns (one column's is its own primaryKey()). */
  readonly primaryKey?: Names<C>;
  readonly indexes?: Readonly<Record<string, IndexSpec<C>>>;
  /** CHECK constraints by name. */
  checks?(t: Record<keyof C & string, ColumnRef>): Readonly<Record<string, SqlFragment>>;
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
