/** A test file's own empty PostgreSQL database on the run's cluster, or a skip with the one-line reason. */
import { inject } from 'vitest';
import type pg from 'pg';
import { createTestDatabase } from './pg-cluster.ts';
import { LOCK_HOLDERS_SQL } from '../../src/store/pg/dataset-lock.ts';

/** The cluster URL, or null when PostgreSQL cannot run here (then `pgSkipReason` says why). */
export const pgClusterUrl: string | null = inject('pgUrl');
export const pgSkipReason: string = inject('pgSkipReason') ?? '';
const pgTemplate: string | null = inject('pgTemplate');

/** A new empty database for the calling test (file); its URL. */
export function newPgDatabase(prefix?: string): Promise<string> {
  if (!pgClusterUrl) throw new Error(`PostgreSQL unavailable: ${pgSkipReason}`);
  return createTestDatabase(pgClusterUrl, prefix);
}

/**
 * A new database holding an empty dataset already migrated (a copy of the run's template): for tests of what
 * runs and reads do, not of the migrations (pg-store-open.test.ts and pg-schema-parity.test.ts migrate their own).
 */
export function newMigratedPgDatabase(prefix?: string): Promise<string> {
  if (!pgClusterUrl || !pgTemplate) throw new Error(`PostgreSQL unavailable: ${pgSkipReason}`);
  return createTestDatabase(pgClusterUrl, prefix, pgTemplate);
}

/** The backend pids of the sessions holding the dataset lock now (LOCK_HOLDERS_SQL, as the claims read it). */
export async function lockHolders(pool: pg.Pool): Promise<Set<number>> {
  const { rows } = await pool.query<{ pid: number }>(LOCK_HOLDERS_SQL);
  return new Set(rows.map((r) => r.pid));
}
