/**
 * The PostgreSQL store's one way to send statements together: one round trip, values bound (never quoted in), each
 * prepared once by name. The caller sends or holds open BEGIN; a failed batch ending in COMMIT is rolled back.
 */
import type pg from 'pg';
import { prepareValue } from 'pg/lib/utils.js';
import { statementName, type GroupStatement } from './pg-statements.ts';
import { sendSynced, type WireStatement } from './pg-synced-batch.ts';

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
  return (s) => {
    if (typeof s === 'string') return { text: s };
    const values = s.values.map(prepareValue);
    const name = statementName(s.text);
    if (prepared[name] === undefined && !fresh.has(name)) {
      count ??= Object.keys(prepared).length;
      if (count + fresh.size >= PREPARED_DEFAULTS.maxPerConnection) return { text: s.text, values };
      fresh.add(name);
    }
    return { name, text: s.text, values };
  };
}

/** `statements` as one transaction in one round trip (BEGIN and COMMIT sent with them); a failure leaves none open. */
export async function pipelineTransaction(client: pg.ClientBase, statements: readonly GroupStatement[]): Promise<pg.QueryResult[]> {
  return (await pipelineStatements(client, ['BEGIN', ...statements, 'COMMIT'])).slice(1, -1);
}
