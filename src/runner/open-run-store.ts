/** The run's dataset on the engine its options name (store/run-store.ts). */
import type { RunStore } from '../store/run-store.ts';
import { openSqliteRunStore } from '../store/sqlite-run-store.ts';
import type { RunOptions } from './run-options.ts';

export async function openRunStore(options: Pick<RunOptions, 'dbPath' | 'lockLeaseMs'>): Promise<RunStore> {
  return openSqliteRunStore({ dbPath: options.dbPath, lockLeaseMs: options.lockLeaseMs });
}
