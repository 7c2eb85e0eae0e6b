/**
 * store/raw-prune.ts's rule as one DELETE: a body goes only once a newer accepted one is committed; SKIP LOCKED keeps
 * workers ending a job together from deadlocking. Bodies are text (TOAST compresses them): nothing for `compressOld`.
 */
import type pg from 'pg';
import { inPgTransaction } from './transaction.ts';
import { WRITE_META_SQL } from '../dataset-store.ts';
import { RAW_PRUNED_KEY, retentionCutoff, supersededBodiesSql, type PruneOptions, type PruneReport } from '../raw-prune.ts';

/** Drops superseded bodies past the retention period; the caller holds the dataset lock (shared or exclusive). */
export async function pruneRawBodiesPg(pool: pg.Pool, options: PruneOptions): Promise<PruneReport> {
  const cutoff = retentionCutoff(options.keepDays);
  const jobNames = options.jobs === undefined ? undefined : 'SELECT unnest($2::text[])';
  const droppable = supersededBodiesSql({ cutoff: '$1::timestamptz', jobNames });
  const params = options.jobs === undefined ? [cutoff] : [cutoff, [...options.jobs]];
  return inPgTransaction(pool, async (client) => {
    // pg_column_size: the bytes a body takes as stored, after PostgreSQL's own compression.
    const { rows } = await client.query<{ n: number; bytes: string }>(
      options.dryRun
        ? `SELECT count(*)::int AS n, coalesce(sum(pg_column_size(body)), 0)::bigint AS bytes FROM raw_responses WHERE id IN (${droppable})`
        : `WITH gone AS (DELETE FROM raw_responses WHERE id IN (SELECT id FROM raw_responses WHERE id IN (${droppable}) FOR UPDATE SKIP LOCKED)
             RETURNING pg_column_size(body) AS bytes)
           SELECT count(*)::int AS n, coalesce(sum(bytes), 0)::bigint AS bytes FROM gone`,
      params,
    );
    const dropped = rows[0]!.n;
    if (!options.dryRun && dropped > 0) {
      // Reprocess must know bodies were dropped, and learns it in the same commit as the deletes.
      await client.query(WRITE_META_SQL.postgres, [RAW_PRUNED_KEY, new Date().toISOString()]);
    }
    const total = (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM raw_responses`)).rows[0]!.n;
    return {
      dropped, droppedBytes: Number(rows[0]!.bytes), compressed: 0, compressedSavedBytes: 0,
      kept: options.dryRun ? total - dropped : total, cutoff,
    };
  });
}
