/**
 * Statements with their values written in as literals, so that a group's statements reach the server as one
 * multi-statement query: one round trip for all of them, where node-postgres sends bound statements one at a
 * time, each waiting for the one before (it does not pipeline). A value becomes the text node-postgres would
 * send as its parameter, quoted as an E'' string (valid whatever standard_conforming_strings says); the server
 * casts it to the column's type as it does a parameter's text.
 */
import type pg from 'pg';

/** A value as an SQL literal: NULL, or its parameter text quoted. */
export function sqlLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  const text = parameterText(value);
  // A NUL cannot be in PostgreSQL text, and would end the query's text early: refused, as a bound one is.
  if (text.includes('\0')) throw new Error('a value holds a NUL character, which PostgreSQL text cannot store');
  return `E'${text.replace(/[\\']/g, (c) => c + c)}'`;
}

/** The text node-postgres sends for a parameter (its prepareValue), for the values the writer stores. */
function parameterText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object' && !Array.isArray(value) && !ArrayBuffer.isView(value)) return JSON.stringify(value);
  throw new Error(`internal: no literal for a value of type ${Array.isArray(value) ? 'array' : typeof value}`);
}

/** `head VALUES (...), (...) tail` with the rows written in; null for no rows. */
export function valuesSql(head: string, rows: readonly (readonly unknown[])[], tail = ''): string | null {
  if (rows.length === 0) return null;
  return `${head} VALUES ${rows.map((row) => `(${row.map(sqlLiteral).join(', ')})`).join(', ')}${tail}`;
}

/**
 * Runs statements in order as one query (one round trip), in the caller's transaction; each statement's result
 * in order. The first that fails stops the rest and throws.
 */
export async function runStatements(client: pg.ClientBase, statements: ReadonlyArray<string | null>, types?: pg.CustomTypesConfig): Promise<pg.QueryResult[]> {
  const texts = statements.filter((s): s is string => s !== null);
  if (texts.length === 0) return [];
  const text = texts.join(';\n');
  const got = (await client.query(types ? { text, types } : text)) as unknown as pg.QueryResult | pg.QueryResult[];
  return Array.isArray(got) ? got : [got];
}
