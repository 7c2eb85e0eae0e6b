/**
 * The PostgreSQL store's one way to send statements together: back to back on one connection without waiting
 * for each one's answer (node-postgres's pipeline mode), one round trip for all of them, each bound to its
 * values (the extended protocol) as a statement the connection prepared once by name (pg-statements.ts). No
 * value is quoted into the SQL text, escaped, and lexed back out of it by the server (a group's raw bodies are
 * tens of kilobytes), and a statement that returns nothing sends no row description.
 * Each statement is its own exchange with the server (its own Sync): unlike a multi-statement query they are
 * one transaction only inside BEGIN ... COMMIT, which the caller sends or holds open (pipelineTransaction sends
 * both); after a failed statement the server refuses the rest of that transaction, and a COMMIT then rolls it back.
 */
import type pg from 'pg';
import { prepareValue } from 'pg/lib/utils.js';
import { statementName, type GroupStatement } from './pg-statements.ts';

export const PREPARED_DEFAULTS = {
  /** Statements kept prepared per connection; past it a statement goes unnamed (parsed and planned each time). */
  maxPerConnection: 256,
} as const;

/**
 * The names each connection has prepared (node-postgres prepares a name on first use, then only binds it), keyed
 * by the client's connection: a caller may hand in a wrapper of the client (the writer's lazy BEGIN proxy, a new
 * one each group), and counted per wrapper the quota would never bind the connection.
 */
const preparedOn = new WeakMap<object, Set<string>>();

/** node-postgres's client as this module drives it: its pipeline switch and the socket it writes to. */
interface PipelinedClient {
  pipeline: boolean;
  /** Not every stream corks (node-postgres checks too: a Cloudflare socket does not). */
  connection: { stream: { cork?: () => void; uncork?: () => void } };
}

/**
 * Runs `statements` in order, in one round trip; each given statement's result in order (nulls left out). A
 * statement that fails makes the whole call throw its error, once every answer is in (the connection is then
 * free for the caller's ROLLBACK). The client must have nothing else in flight.
 */
export async function pipelineStatements(client: pg.ClientBase, statements: readonly GroupStatement[], types?: pg.CustomTypesConfig): Promise<pg.QueryResult[]> {
  const c = client as unknown as PipelinedClient;
  const prepared = preparedOn.get(c.connection) ?? new Set<string>();
  preparedOn.set(c.connection, prepared);
  // Every value converted before anything is sent: node-postgres failing to convert one mid-pipeline would skip
  // that statement alone and send the rest, COMMIT included, committing a group without it.
  const queries = statements.flatMap((s) => (s === null ? [] : [queryOf(s, prepared, types)]));
  c.pipeline = true;
  let settled: Array<PromiseSettledResult<pg.QueryResult>>;
  try {
    // One write for the whole group, not one per statement.
    c.connection.stream.cork?.();
    let sent: Array<Promise<pg.QueryResult>>;
    try {
      sent = queries.map((q) => client.query(q));
    } finally {
      c.connection.stream.uncork?.();
    }
    settled = await Promise.allSettled(sent);
  } finally {
    c.pipeline = false;
  }
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<pg.QueryResult>).value);
}

/** The query node-postgres sends for `s`: named once its text has a name, unnamed past the connection's quota. */
function queryOf(s: Exclude<GroupStatement, null>, prepared: Set<string>, types?: pg.CustomTypesConfig): pg.QueryConfig {
  if (typeof s === 'string') return types ? { text: s, types } : { text: s };
  const values = s.values.map(prepareValue);
  const name = statementName(s.text);
  if (!prepared.has(name)) {
    if (prepared.size >= PREPARED_DEFAULTS.maxPerConnection) return { text: s.text, values, ...(types ? { types } : {}) };
    prepared.add(name);
  }
  return { name, text: s.text, values, ...(types ? { types } : {}) };
}

/**
 * `statements` as one transaction in one round trip: BEGIN and COMMIT go with them; their results in order (nulls
 * left out). After a failure the COMMIT rolls back, so the connection is left outside any transaction.
 */
export async function pipelineTransaction(client: pg.ClientBase, statements: readonly GroupStatement[], types?: pg.CustomTypesConfig): Promise<pg.QueryResult[]> {
  return (await pipelineStatements(client, ['BEGIN', ...statements, 'COMMIT'], types)).slice(1, -1);
}
