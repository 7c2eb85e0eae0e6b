/**
 * reprocess and prune on PostgreSQL: refused where no netingest dataset is (writing would create one by mistake), with
 * no statement timeout (it would only roll them back), under the dataset lock held exclusive (LockedError).
 */
import { UsageError } from '../../errors.ts';
import { DatabaseError } from '../errors.ts';
import { holdExclusive } from './dataset-lock.ts';
import { redactDatabaseUrl } from './database-url.ts';
import { openPgStore, usingPgStore, type PgStore } from './open.ts';

export type MaintenanceCommand = 'reprocess' | 'prune';

export async function withPgMaintenance<T>(url: string, command: MaintenanceCommand, fn: (store: PgStore) => Promise<T>): Promise<T> {
  await refuseEmpty(url, command);
  // Two connections at most at once: the lock's, and the work's.
  return usingPgStore(await openPgStore(url, { statementTimeoutMs: 0, maxConnections: 3 }), async (store) => {
    const hold = await holdExclusive(store.pool, store.shownUrl, `netingest ${command}`);
    try {
      return await fn(store);
    } finally {
      await hold.release();
    }
  });
}

async function refuseEmpty(url: string, command: MaintenanceCommand): Promise<void> {
  try {
    await (await openPgStore(url, { readOnly: true, maxConnections: 1 })).close();
  } catch (err) {
    if (err instanceof DatabaseError && err.code === 'DB_NEEDS_MIGRATION') return;
    if (err instanceof UsageError && err.code === 'DB_NOT_FOUND') {
      throw new UsageError(`no netingest dataset in ${redactDatabaseUrl(url)}: nothing to ${command} (see --db)`, 'DB_NOT_FOUND');
    }
    throw err;
  }
}
