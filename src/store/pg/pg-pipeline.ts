/**
 * The PostgreSQL store's one way to send statements together: back to back on one connection without waiting
 * for each one's answer, one round trip for all of them, each bound to its values (the extended protocol) as a
 * statement the connection prepared once by name (pg-statements.ts). No value is quoted into the SQL text,
 * escaped, and lexed back out of it by the server (a group's raw bodies are tens of kilobytes).
 * One Sync ends them all (pg-synced-batch.ts): the server replies once, and after a failed statement runs none of
 * the rest. They are one transaction inside BEGIN ... COMMIT, which the caller sends or holds open
 * (pipelineTransaction sends both); a batch ending in COMMIT that fails is rolled back.
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
 * Runs `statements` in order, in one round trip; each given statement's result in order (nulls left out). A
 * statement that fails makes the whole call throw its error, once the server has answered (the connection is
 * then free for the caller's ROLLBACK); the statements after it do not run, and a batch ending in COMMIT is rolled
 * back (as a COMMIT after a failed statement would). One Sync for the whole batch (pg-synced-batch.ts). The client
 * must have nothing else in flight.
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
 * The statement as sent, for this batch on `client`'s connection: named once its text has a name, unnamed past the
 * connection's quota. What the connection has prepared is node-postgres's own record of it (`parsedStatements`,
 * which pg-synced-batch.ts keeps true after a failed batch), the same whatever wrapper of the client is handed in.
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

/**
 * `statements` as one transaction in one round trip: BEGIN and COMMIT go with them; their results in order (nulls
 * left out). After a failure the COMMIT rolls back, so the connection is left outside any transaction.
 */
export async function pipelineTransaction(client: pg.ClientBase, statements: readonly GroupStatement[], types?: pg.CustomTypesConfig): Promise<pg.QueryResult[]> {
  return (await pipelineStatements(client, ['BEGIN', ...statements, 'COMMIT'], types)).slice(1, -1);
}
