/**
 * The PostgreSQL store's one way to send statements together: one round trip, values bound (never quoted in), each
 * prepared once by name. The caller sends or holds open BEGIN; a failed batch ending in COMMIT is rolled back.
 */
import type pg from 'pg';
import { prepareValue } from 'pg/lib/utils.js';
import { sendSynced, type WireStatement } from './pg-synced-batch.ts';

/** A statement and its values, for its placeholders $1, $2... in order; its rows' form and types as WireStatement's. */
export type BoundStatement = { text: string; values: readonly unknown[] } & Pick<WireStatement, 'rowMode' | 'types'>;

/** What pipelineStatements sends: plain SQL (no values), a statement with its values, or nothing (left out). */
export type GroupStatement = string | BoundStatement | null;

/** A statement's name by its text: the same text is the same statement on every connection. */
const names = new Map<string, string>();

/** The name `text` is prepared under (`netingest_p<n>`, unique per process). */
export function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) names.set(text, (name = `netingest_p${names.size + 1}`));
  return name;
}

/** `text` bound to `values` as a named query: prepared on its first use on a connection, then only bound. */
export function namedQuery(text: string, values: readonly unknown[]): pg.QueryConfig {
  return { name: statementName(text), text, values: values as unknown[] };
}

/** A most PostgreSQL binds in one statement: its wire protocol counts them in 16 bits. */
export const MAX_PARAMS = 65_535;

/** `head VALUES (...), (...) tail` over `rows` in order, in as few statements as MAX_PARAMS allows (none for none). */
export function valuesStatements(head: string, rows: readonly (readonly unknown[])[], tail = ''): BoundStatement[] {
  if (rows.length === 0) return [];
  const width = rows[0]!.length;
  const perStatement = Math.max(1, Math.floor(MAX_PARAMS / width));
  if (rows.length > perStatement) {
    const chunks: BoundStatement[] = [];
    for (let i = 0; i < rows.length; i += perStatement) chunks.push(...valuesStatements(head, rows.slice(i, i + perStatement), tail));
    return chunks;
  }
  // One loop checks and copies: flat() and some() cost more on this hot path.
  const values: unknown[] = [];
  for (const row of rows) {
    if (row.length !== width) throw new Error(`internal: rows of several widths for ${head}`);
    for (let i = 0; i < width; i++) values.push(row[i]);
  }
  // Texts are cached by shape, keyed by head and tail themselves: a joined key would hash kilobytes of SQL each time.
  let byTail = shapes.get(head);
  if (!byTail) shapes.set(head, (byTail = new Map()));
  let bySize = byTail.get(tail);
  if (!bySize) byTail.set(tail, (bySize = new Map()));
  const size = rows.length * 4096 + width;
  let text = bySize.get(size);
  if (text === undefined) {
    let n = 0;
    const tuples = rows.map(() => `(${Array.from({ length: width }, () => `$${++n}`).join(', ')})`);
    bySize.set(size, (text = `${head} VALUES ${tuples.join(', ')}${tail}`));
  }
  return [{ text, values }];
}

/** valuesStatements' texts by head, tail and shape (a few hundred in a run: tables x row counts up to a group's size). */
const shapes = new Map<string, Map<string, Map<number, string>>>();

export const PREPARED_DEFAULTS = {
  /** Statements kept prepared per connection; past it a statement goes unnamed (parsed and planned each time). */
  maxPerConnection: 256,
} as const;

/**
 * Runs `statements` in order in one round trip; each given one's result, in order (nulls left out). A failure throws
 * once the server has answered, so the connection is free for the caller's ROLLBACK. Nothing else may be in flight.
 */
export async function pipelineStatements(client: pg.ClientBase, statements: readonly GroupStatement[], types?: pg.CustomTypesConfig): Promise<pg.QueryResult[]> {
  // Every value converted before anything is sent: a value that cannot be sent sends nothing.
  const given = statements.filter((s): s is Exclude<GroupStatement, null> => s !== null);
  const wire = given.map(namingOn(client));
  try {
    return await sendSynced(client, wire, types);
  } catch (err) {
    if (given.at(-1) === 'COMMIT') await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/**
 * The statement as sent on `client`'s connection: named, or unnamed past its quota. What is prepared is read from the
 * connection's own record (`parsedStatements`, kept true by pg-synced-batch.ts), whatever wraps the client.
 */
function namingOn(client: pg.ClientBase): (s: Exclude<GroupStatement, null>) => WireStatement {
  const prepared = (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection.parsedStatements;
  /** Names this batch prepares first; the connection's count read only when one is new (rare once warm). */
  const fresh = new Set<string>();
  let count: number | null = null;
  return (given) => {
    // Plain SQL is named too (BEGIN, COMMIT, SET LOCAL): the server then parses each text once a connection, not every time.
    const s = typeof given === 'string' ? { text: given, values: [] } : given;
    const values = s.values.map(prepareValue);
    const name = statementName(s.text);
    if (prepared[name] === undefined && !fresh.has(name)) {
      count ??= Object.keys(prepared).length;
      if (count + fresh.size >= PREPARED_DEFAULTS.maxPerConnection) return { text: s.text, values, rowMode: s.rowMode, types: s.types };
      fresh.add(name);
    }
    return { name, text: s.text, values, rowMode: s.rowMode, types: s.types };
  };
}

/** `statements` as one transaction in one round trip (BEGIN and COMMIT sent with them); a failure leaves none open. */
export async function pipelineTransaction(client: pg.ClientBase, statements: readonly GroupStatement[]): Promise<pg.QueryResult[]> {
  return (await pipelineStatements(client, ['BEGIN', ...statements, 'COMMIT'])).slice(1, -1);
}
