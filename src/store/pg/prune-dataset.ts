/**
 * `netingest prune` on PostgreSQL: the dataset lock held exclusive (refused while a worker runs), the retention
 * rule (pg/raw-prune.ts), then a plain VACUUM of raw_responses. Plain, not FULL: it blocks no reader or writer and
 * leaves the freed space to new bodies rather than shrinking the table's files; VACUUM FULL rewrites the table
 * under an exclusive lock and is the DBA's call.
 */
import type pg from 'pg';
import type { PruneOptions, PruneReport } from '../raw-prune.ts';
import { pruneRawBodiesPg } from './raw-prune.ts';
import { withPgMaintenance } from './maintenance.ts';

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
export function prunePgDataset(url: string, options: PgPruneOptions): Promise<PgPruneReport> {
  return withPgMaintenance(url, 'prune', async ({ pool }) => {
    const rawResponsesBytesBefore = await rawResponsesBytes(pool);
    const report = await pruneRawBodiesPg(pool, options);
    const vacuumed = options.vacuum && !options.dryRun && report.dropped > 0;
    // VACUUM cannot run in a transaction; a pooled connection outside one is what pool.query gives.
    if (vacuumed) await pool.query('VACUUM (ANALYZE) raw_responses');
    return { ...report, rawResponsesBytesBefore, rawResponsesBytesAfter: await rawResponsesBytes(pool), vacuumed };
  });
}

async function rawResponsesBytes(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ bytes: string }>(`SELECT pg_total_relation_size('raw_responses')::bigint AS bytes`);
  return Number(rows[0]!.bytes);
}
