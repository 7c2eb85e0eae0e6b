/**
 * Statements for both engines: a tagged template whose slots are parameters (`param`, `named()`) or per-engine fragments
 * (`dialect()`), both texts built once from the pieces, never by rewriting SQL. Readers: generators yielding statements
 * and given their rows (store/read-steps.ts runs them); no database here, so operations need no store.
 */

/** Both engines' texts of one statement, and PostgreSQL's order of its named parameters. */
export interface Statement {
  readonly sqlite: string;
  readonly postgres: string;
  /** Named parameters in PostgreSQL's order (`$1` is the first); null when they are positional (or none). */
  readonly names: readonly string[] | null;
}

/** The next positional parameter. */
export const param = Object.freeze({ slot: 'param' as const });
type Positional = typeof param;

interface Named { slot: 'named'; name: string }
interface Dialect { slot: 'dialect'; sqlite: string; postgres: string }
/** Pieces of a statement whose count is known only at run time (an IN list, OR-ed clauses). */
export interface Fragment { slot: 'fragment'; parts: ReadonlyArray<string | Slot> }
type Slot = Positional | Named | Dialect | Fragment;

/** A named parameter (bound from an object): `@name` on SQLite, `$n` on PostgreSQL, the same n each time. */
export function named(name: string): Named {
  return { slot: 'named', name };
}

/** Text that differs by engine, with no parameter in it. */
export function dialect(texts: { sqlite: string; postgres: string }): Dialect {
  return { slot: 'dialect', ...texts };
}

/** Pieces of text and slots, in order: `fragment(['(a = ', param, ')'])`. */
export function fragment(parts: ReadonlyArray<string | Slot>): Fragment {
  return { slot: 'fragment', parts };
}

/** `count` positional parameters separated by commas (an IN list). */
export function paramList(count: number): Fragment {
  return fragment(Array.from({ length: count }, (_, i) => (i === 0 ? [param] : [', ', param])).flat());
}

/** A whole statement each engine spells its own way, with no parameter (a read one engine has no use for). */
export function perEngine(texts: { sqlite: string; postgres: string }): Statement {
  return statementOf([dialect(texts)]);
}

/** Text the same on both engines (a number or an identifier written into the statement, never a value). */
export function literal(text: string | number): Dialect {
  return dialect({ sqlite: String(text), postgres: String(text) });
}

/** `string_agg` on PostgreSQL; SQLite's `group_concat` takes the same ORDER BY inside. */
export function groupConcat(expression: string, separator: string, orderBy: string): Dialect {
  const args = `${expression}, '${separator.replaceAll("'", "''")}' ORDER BY ${orderBy}`;
  return dialect({ sqlite: `group_concat(${args})`, postgres: `string_agg(${args})` });
}

/** ORDER BY in code-point order, SQLite's default (BINARY): PostgreSQL's text order is the database collation's, so it gets `COLLATE "C"`. */
export function codePointOrder(expression: string): Dialect {
  return dialect({ sqlite: expression, postgres: `${expression} COLLATE "C"` });
}

/** Element `index` of JSON array `array` (ISO-8601 text) as a time, else the earliest: SQLite compares text, PostgreSQL timestamptz. */
export function timeInJsonArray(array: Named | Positional, index: string): Fragment {
  return fragment([
    dialect({ sqlite: 'coalesce(json_extract(', postgres: 'coalesce((' }),
    array,
    dialect({ sqlite: `, '$[' || ${index} || ']'), '')`, postgres: `::jsonb ->> ${index})::timestamptz, '-infinity')` }),
  ]);
}

/** A number as text ('3'): SQLite concatenates numbers as they are, PostgreSQL casts them first. */
export function numberText(expression: string): Dialect {
  return dialect({ sqlite: expression, postgres: `${expression}::text` });
}

/** The statement of `strings` with `slots` in place, as each engine runs it. */
export function sql(strings: TemplateStringsArray, ...slots: Slot[]): Statement {
  return statementOf(strings.flatMap((text, i) => (i < slots.length ? [text, slots[i]!] : [text])));
}

/** The statement of `parts` (text and slots in order), as each engine runs it. */
export function statementOf(parts: ReadonlyArray<string | Slot>): Statement {
  const built = { sqlite: '', postgres: '', positional: 0, names: [] as string[] };
  append(built, parts);
  // Both kinds in one statement would number PostgreSQL's parameters twice over.
  if (built.positional > 0 && built.names.length > 0) throw new Error(`a statement takes positional or named parameters, not both: ${built.sqlite}`);
  return Object.freeze({ sqlite: built.sqlite, postgres: built.postgres, names: built.names.length > 0 ? built.names : null });
}

function append(built: { sqlite: string; postgres: string; positional: number; names: string[] }, parts: ReadonlyArray<string | Slot>): void {
  for (const part of parts) {
    if (typeof part === 'string') {
      built.sqlite += part;
      built.postgres += part;
    } else if (part.slot === 'param') {
      built.positional += 1;
      built.sqlite += '?';
      built.postgres += `$${built.positional}`;
    } else if (part.slot === 'named') {
      if (!built.names.includes(part.name)) built.names.push(part.name);
      built.sqlite += `@${part.name}`;
      built.postgres += `$${built.names.indexOf(part.name) + 1}`;
    } else if (part.slot === 'dialect') {
      built.sqlite += part.sqlite;
      built.postgres += part.postgres;
    } else {
      append(built, part.parts);
    }
  }
}

/** `build` memoized by the statement's shape (few and bounded), so a hot path builds each shape once. */
export function byShape<K extends string | number>(build: (key: K) => Statement): (key: K) => Statement {
  const built = new Map<K, Statement>();
  return (key) => {
    let statement = built.get(key);
    if (statement === undefined) built.set(key, (statement = build(key)));
    return statement;
  };
}

/** PostgreSQL's values for `statement` from the parameters a reader gives (an array, or an object by name). */
export function pgValues(statement: Statement, params: readonly unknown[] | Readonly<Record<string, unknown>>): unknown[] {
  if (statement.names === null) return Array.isArray(params) ? [...params] : [];
  const byName = params as Readonly<Record<string, unknown>>;
  return statement.names.map((name) => byName[name]);
}

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
export function* rawRows(sql: Statement, params: StepParams): Reads<unknown[][]> {
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
