/**
 * A group's statements sent as one multi-statement query: one round trip for all of them, where node-postgres
 * sends bound statements one at a time, each waiting for the one before (it does not pipeline). A statement
 * with placeholders ($1, $2...) goes as EXECUTE of a statement this connection prepared the first time it sent
 * that text (PREPARE ... AS, the text untouched), its values as literals: the server parses and plans the
 * statement's text once per connection, not once per group (a group's upserts are long). A value becomes the
 * text node-postgres would send as its parameter, quoted as an E'' string (valid whatever
 * standard_conforming_strings says); the server casts it to the parameter's type as it does a bound one's.
 */
import type pg from 'pg';

/** A statement and its values, for its placeholders $1, $2... in order. */
export interface BoundStatement {
  text: string;
  values: readonly unknown[];
}

/** What runStatements sends: plain SQL, a statement with its values, or nothing (left out). */
export type GroupStatement = string | BoundStatement | null;

export const PREPARED_DEFAULTS = {
  /** Statements kept prepared per connection; past it a text goes as PREPARE, EXECUTE and DEALLOCATE. */
  maxPerConnection: 256,
} as const;

/** The statements each connection has prepared, by text: names are unique per process, so none collides. */
const preparedOn = new WeakMap<pg.ClientBase, Map<string, string>>();
let nextName = 0;

/** A value as an SQL literal: NULL, or its parameter text quoted. */
export function sqlLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  const text = parameterText(value);
  // Most values hold no quote, backslash or NUL: they go as they are.
  if (!NEEDS_CARE.test(text)) return `E'${text}'`;
  // A NUL cannot be in PostgreSQL text, and would end the query's text early: refused, as a bound one is.
  if (text.includes('\0')) throw new Error('a value holds a NUL character, which PostgreSQL text cannot store');
  return `E'${text.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

const NEEDS_CARE = /['\\\0]/;

/** The text node-postgres sends for a parameter (its prepareValue), for the values the writer stores. */
function parameterText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object' && !Array.isArray(value) && !ArrayBuffer.isView(value)) return JSON.stringify(value);
  throw new Error(`internal: no literal for a value of type ${Array.isArray(value) ? 'array' : typeof value}`);
}

/** `head VALUES ($1, ...), (...) tail` over `rows`; null for no rows. */
export function valuesStatement(head: string, rows: readonly (readonly unknown[])[], tail = ''): BoundStatement | null {
  if (rows.length === 0) return null;
  const width = rows[0]!.length;
  if (rows.some((row) => row.length !== width)) throw new Error(`internal: rows of several widths for ${head}`);
  // The text depends only on the shape: built once per head, tail, row count and width, not once per group.
  const key = `${head}\0${tail}\0${rows.length}\0${width}`;
  let text = shapes.get(key);
  if (text === undefined) {
    let n = 0;
    const tuples = rows.map(() => `(${Array.from({ length: width }, () => `$${++n}`).join(', ')})`);
    shapes.set(key, (text = `${head} VALUES ${tuples.join(', ')}${tail}`));
  }
  return { text, values: rows.flat() };
}

/** valuesStatement's texts by shape (a few hundred in a run: tables x row counts up to a group's size). */
const shapes = new Map<string, string>();

/**
 * Runs statements in order as one query (one round trip), in the caller's transaction; each given statement's
 * result in order (a PREPARE sent before one is not among them). The first that fails stops the rest and throws.
 */
export async function runStatements(client: pg.ClientBase, statements: readonly GroupStatement[], types?: pg.CustomTypesConfig): Promise<pg.QueryResult[]> {
  const known = preparedOn.get(client) ?? new Map<string, string>();
  const { texts, at, added } = queryTexts(statements, known);
  if (texts.length === 0) return [];
  const text = texts.join(';\n');
  let got: pg.QueryResult | pg.QueryResult[];
  try {
    got = (await client.query(types ? { text, types } : text)) as unknown as pg.QueryResult | pg.QueryResult[];
  } catch (err) {
    // Which PREPAREs ran before the failure is not known: this connection prepares afresh (new names) from now on.
    preparedOn.delete(client);
    throw err;
  }
  for (const [t, name] of added) known.set(t, name);
  preparedOn.set(client, known);
  const all = Array.isArray(got) ? got : [got];
  return at.map((i) => all[i]!);
}

/** The query's statements; `at`: where each given statement's result is among theirs; `added`: prepared by it. */
function queryTexts(statements: readonly GroupStatement[], known: ReadonlyMap<string, string>): { texts: string[]; at: number[]; added: Map<string, string> } {
  const added = new Map<string, string>();
  const texts: string[] = [];
  const at: number[] = [];
  for (const s of statements) {
    if (s === null) continue;
    if (typeof s === 'string') {
      at.push(texts.push(s) - 1);
      continue;
    }
    let name = known.get(s.text) ?? added.get(s.text);
    const keep = name !== undefined || known.size + added.size < PREPARED_DEFAULTS.maxPerConnection;
    if (name === undefined) {
      name = `netingest_s${++nextName}`;
      if (keep) added.set(s.text, name);
      texts.push(`PREPARE ${name} AS ${s.text}`);
    }
    at.push(texts.push(`EXECUTE ${name}${s.values.length > 0 ? `(${s.values.map(sqlLiteral).join(', ')})` : ''}`) - 1);
    if (!keep) texts.push(`DEALLOCATE ${name}`);
  }
  return { texts, at, added };
}
