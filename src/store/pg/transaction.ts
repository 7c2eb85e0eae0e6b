/** One transaction on one pooled connection: `fn` runs between `begin` and COMMIT, and a throw rolls it back. */
import type pg from 'pg';

export function inPgTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  return withPgClient(pool, async (client) => {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  });
}

/** `fn` on one pooled connection, ROLLBACK after a throw: for a caller sending BEGIN and COMMIT in its own queries. */
export async function withPgClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let result: T;
  try {
    result = await fn(client);
  } catch (err) {
    // Rolled back and pooled, or dropped when ROLLBACK fails (lost, or left mid-read).
    let broken: Error | undefined;
    await client.query('ROLLBACK').catch((rollbackErr: Error) => (broken = rollbackErr));
    client.release(broken);
    throw err;
  }
  client.release();
  return result;
}

/** `fn` tried again, at most `retries` more times, while it meets another transaction in a deadlock (or a serialization failure). */
export async function retryingConflicts<T>(retries: number, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isConflict(err) || attempt >= retries) throw err;
    }
  }
}

/** Whether `err` is a transaction the server ended for meeting another (a deadlock, a serialization failure): try it again. */
export function isConflict(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}
