/** The run's dataset on the engine its options name (store/run-store.ts): a postgres:// URL or a SQLite file. */
import { isPostgresUrl } from '../store/pg/database-url.ts';
import type { RunStore } from '../store/run-store.ts';
import { openSqliteRunStore } from '../store/sqlite-run-store.ts';
import type { RunOptions } from './run-options.ts';

/** On PostgreSQL the lock's lease is the lease of a worker's claims (how long a dead worker's inputs wait). */
export async function openRunStore(options: Pick<RunOptions, 'dbPath' | 'lockLeaseMs' | 'sharedRateWindowMs'>): Promise<RunStore> {
  if (isPostgresUrl(options.dbPath)) {
    // Loaded only here: a SQLite run (the nightly case) must not pay pg's and drizzle's import at its start.
    const { openPgRunStore } = await import('../store/pg/pg-run-store.ts');
    return openPgRunStore({ url: options.dbPath, leaseMs: options.lockLeaseMs, rateWindowMs: options.sharedRateWindowMs });
  }
  return openSqliteRunStore({ dbPath: options.dbPath, lockLeaseMs: options.lockLeaseMs });
}
