/**
 * `netingest prune` on PostgreSQL: the dataset lock held exclusive (refused while a worker runs), the retention
 * rule (pg/raw-prune.ts), then a plain VACUUM of raw_responses. Plain, not FULL: it blocks no reader or writer and
 * leaves the freed space to new bodies rather than shrinking the table's files; VACUUM FULL rewrites the table
 * under an exclusive lock and is the DBA's call.
 */
import type pg from 'pg';
import type { PruneOptions, PruneReport } from '../raw-prune.ts';
import { UsageError } from '../../errors.ts';
import { DatabaseError } from '../errors.ts';
import { holdExclusive } from './dataset-lock.ts';
import { redactDatabaseUrl } from './database-url.ts';
import { openPgStore } from './open.ts';
import { pruneRawBodiesPg } from './raw-prune.ts';

/** Options of prunePgDataset(). */
export interface PgPruneOptions extends Pick<PruneOptions, 'keepDays' | 'dryRun' | 'now'> {
  /** VACUUM (ANALYZE) raw_responses afterwards when anything was dropped. */
  vacuum: boolean;
}

/** What the command reports on PostgreSQL: the rule's report and raw_responses' size on the server. */
export type PgPruneReport = PruneReport & {
  /** pg_total_relation_size('raw_responses') (table, TOAST and indexes) before and after, in bytes. */
  rawResponsesBytesBefore: number;
  rawResponsesBytesAfter: number;
  vacuumed: boolean;
};

/** Prunes the dataset at `url` under the exclusive dataset lock (LockedError while a worker runs). */
export async function prunePgDataset(url: string, options: PgPruneOptions): Promise<PgPruneReport> {
  await refuseEmpty(url);
  // Maintenance the user asked for: a large archive's delete or vacuum may take longer than a run's statements.
  const store = await openPgStore(url, { statementTimeoutMs: 0, maxConnections: 3 });
  try {
    const lock = await holdExclusive(store.pool, store.shownUrl, 'netingest prune');
    try {
      const rawResponsesBytesBefore = await rawResponsesBytes(store.pool);
      const report = await pruneRawBodiesPg(store.pool, options);
      const vacuumed = options.vacuum && !options.dryRun && report.dropped > 0;
      // VACUUM cannot run in a transaction; a pooled connection outside one is what pool.query gives.
      if (vacuumed) await store.pool.query('VACUUM (ANALYZE) raw_responses');
      return { ...report, rawResponsesBytesBefore, rawResponsesBytesAfter: await rawResponsesBytes(store.pool), vacuumed };
    } finally {
      await lock.release();
    }
  } finally {
    await store.close();
  }
}

/**
 * A database with no netingest schema is refused and left empty, as SQLite's prune refuses a missing file: opening
 * it to write would create the schema in a database the user may have named by mistake. An older schema is fine
 * (the writable open upgrades it).
 */
async function refuseEmpty(url: string): Promise<void> {
  try {
    await (await openPgStore(url, { readOnly: true, maxConnections: 1 })).close();
  } catch (err) {
    if (err instanceof UsageError && err.code === 'DB_NOT_FOUND') {
      throw new UsageError(`no netingest dataset in ${redactDatabaseUrl(url)}: nothing to prune (see --db)`, 'DB_NOT_FOUND');
    }
    if (!(err instanceof DatabaseError && err.code === 'DB_NEEDS_MIGRATION')) throw err;
  }
}

async function rawResponsesBytes(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ bytes: string }>(`SELECT pg_total_relation_size('raw_responses')::bigint AS bytes`);
  return Number(rows[0]!.bytes);
}
