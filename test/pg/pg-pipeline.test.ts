/**
 * The PostgreSQL store's one way of sending statements together (src/store/pg/pg-pipeline.ts): a transaction sent
 * in one round trip commits whole or not at all, also when a value cannot be sent at all; a connection keeps at
 * most its quota of statements prepared, whatever object the caller reaches it through.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { pipelineStatements, pipelineTransaction, PREPARED_DEFAULTS } from '../../src/store/pg/pg-pipeline.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

describe.skipIf(!pgClusterUrl)(`statements pipelined in one transaction${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let client: pg.Client;

  beforeAll(async () => {
    client = new pg.Client({ connectionString: await newPgDatabase('pipeline') });
    await client.connect();
    await client.query('CREATE TABLE t (id int PRIMARY KEY, doc jsonb)');
  });
  afterAll(() => client?.end());

  const insert = (id: number, doc: unknown) => ({ text: 'INSERT INTO t (id, doc) VALUES ($1, $2)', values: [id, doc] });
  const ids = async () => (await client.query<{ id: number }>('SELECT id FROM t ORDER BY id')).rows.map((r) => r.id);

  it('commits every statement together, each bound to its values', async () => {
    const results = await pipelineTransaction(client, [insert(1, { a: "it's" }), null, insert(2, null), 'SELECT count(*)::int AS n FROM t']);
    expect(results.map((r) => r.command)).toEqual(['INSERT', 'INSERT', 'SELECT']);
    expect(results[2]!.rows).toEqual([{ n: 2 }]);
    expect(await ids()).toEqual([1, 2]);
  });

  it('a statement the server refuses rolls back the ones before it', async () => {
    await expect(pipelineTransaction(client, [insert(3, null), insert(1, null)])).rejects.toThrow(/duplicate key/);
    expect(await ids()).toEqual([1, 2]);
  });

  it('a value that cannot be sent sends nothing: the statements beside it are not committed without it', async () => {
    // JSON.stringify refuses a BigInt: node-postgres would skip that statement alone and still send COMMIT.
    await expect(pipelineTransaction(client, [insert(4, null), insert(5, { n: 1n }), insert(6, null)])).rejects.toThrow(/BigInt/);
    expect(await ids()).toEqual([1, 2]);
    // The connection is left usable, outside any transaction and out of pipeline mode.
    expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await pipelineTransaction(client, [insert(7, null)]);
    expect(await ids()).toEqual([1, 2, 7]);
  });

  it('counts the statements a connection prepared once for it, whatever wraps it: past the quota they go unnamed', async () => {
    // The writer reaches its connection through a new proxy each group (its lazy BEGIN, pg-group-commit.ts).
    const wrapped = () => new Proxy(client, {
      get(target, prop) {
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const quota = PREPARED_DEFAULTS.maxPerConnection;
    let last: pg.QueryResult | undefined;
    for (let i = 0; i < quota + 20; i++) [last] = await pipelineStatements(wrapped(), [{ text: `SELECT $1::int + ${i} AS n`, values: [1] }]);
    // Past the quota a statement is still answered, parsed and planned each time.
    expect(last!.rows).toEqual([{ n: quota + 20 }]);
    expect((await client.query('SELECT count(*)::int AS n FROM pg_prepared_statements')).rows[0].n).toBe(quota);
  });

  it('a statement prepared in a batch that failed as it ran is used again on the same connection', async () => {
    // Parsed by name, then refused as it ran: the server holds the name, so parsing it again would be refused.
    const once = (id: number) => ({ text: 'INSERT INTO t (id, doc) VALUES ($1, $2) -- prepared in a failed batch', values: [id, null] });
    await expect(pipelineTransaction(client, [once(1)])).rejects.toThrow(/duplicate key/);
    await pipelineTransaction(client, [once(8)]);
    await pipelineTransaction(client, [once(9)]);
    expect(await ids()).toEqual([1, 2, 7, 8, 9]);
  });
});
