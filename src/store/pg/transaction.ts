/**
 * One transaction on one pooled connection: `fn` runs between `begin` and COMMIT, and a throw rolls it back. A
 * connection whose ROLLBACK fails (lost, or a stream left mid-read) is dropped rather than given back to the pool.
 */
import type pg from 'pg';

export function inPgTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  return withPgClient(pool, async (client) => {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  });
}

/**
 * `fn` on one pooled connection, with a ROLLBACK after a throw: for a caller that sends BEGIN and COMMIT inside
 * its own queries (each a round trip saved). A connection whose ROLLBACK fails is dropped, as above.
 */
export async function withPgClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let result: T;
  try {
    result = await fn(client);
  } catch (err) {
    await releaseAfterFailure(client);
    throw err;
  }
  client.release();
  return result;
}

/** A connection after a failure: rolled back and given back to the pool, or dropped when even ROLLBACK fails. */
export async function releaseAfterFailure(client: pg.PoolClient): Promise<void> {
  let broken: Error | undefined;
  await client.query('ROLLBACK').catch((err: Error) => (broken = err));
  client.release(broken);
}
