/** A test file's own empty PostgreSQL database on the run's cluster, or a skip with the one-line reason. */
import { inject } from 'vitest';
import { createTestDatabase } from './pg-cluster.ts';

/** The cluster URL, or null when PostgreSQL cannot run here (then `pgSkipReason` says why). */
export const pgClusterUrl: string | null = inject('pgUrl');
export const pgSkipReason: string = inject('pgSkipReason') ?? '';

/** A new empty database for the calling test (file); its URL. */
export function newPgDatabase(prefix?: string): Promise<string> {
  if (!pgClusterUrl) throw new Error(`PostgreSQL unavailable: ${pgSkipReason}`);
  return createTestDatabase(pgClusterUrl, prefix);
}
