/**
 * The PostgreSQL server's clock, read on this host: the offset between the two is measured once when the store
 * opens, and every time a worker writes into the ledger or compares with it (a run's start, an answer's
 * completion, the freshness cut-off) is the server's. Workers on hosts whose clocks disagree (one running a day
 * ahead) then agree on what is fresh, as they already do on when a lease ends (those are read as `now()`).
 */
import type pg from 'pg';

/** Returns the server's time now as ISO text, from one round trip's measure (good to its latency). */
export async function serverClock(pool: pg.Pool): Promise<() => string> {
  const sentMs = Date.now();
  const { rows } = await pool.query<{ now: Date }>('SELECT clock_timestamp() AS now');
  const receivedMs = Date.now();
  const offsetMs = new Date(rows[0]!.now).getTime() - (sentMs + receivedMs) / 2;
  return () => new Date(Date.now() + offsetMs).toISOString();
}
