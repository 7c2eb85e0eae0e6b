/**
 * Retention of raw_responses: a body is dropped only when older than the retention period AND a newer accepted body
 * answers the same request, so every lookup's latest answer (and an unanswered kept wrong-shape body) stays. Rows
 * built from a dropped body stay; reprocess, seeing `raw_pruned_at`, replays kept bodies over the tables: no row lost.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { Connection } from './connection.ts';
import { encodeRawBody } from './raw-body.ts';
import { WRITE_META_SQL } from './dataset-store.ts';

export interface PruneOptions {
  /** Bodies received less than this many days ago are kept, superseded or not. */
  keepDays: number;
  /** Only the bodies of these jobs' tasks (a job's own retention setting); default every body. */
  jobs?: readonly string[];
  /** Count what would go, change nothing. Default false. */
  dryRun?: boolean;
  /** Also gzip the bodies an earlier netingest stored as text. Default false (only `netingest prune` does it). */
  compressOld?: boolean;
}

export interface PruneReport {
  /** Bodies dropped (or that would be, on a dry run). */
  dropped: number;
  droppedBytes: number;
  /** Bodies gzipped in place, and the bytes that saved. */
  compressed: number;
  compressedSavedBytes: number;
  kept: number;
  cutoff: string;
}

/** netingest_meta's key saying that bodies were dropped (WERE_PRUNED_SQL reads it), set in the prune's transaction. */
export const RAW_PRUNED_KEY = 'raw_pruned_at';
const COMPRESS_BATCH = 500;

/** Drops superseded bodies past the retention period (in one transaction); the caller holds the run lock. */
export function pruneRawBodies(database: Connection, options: PruneOptions): PruneReport {
  const { sqlite } = database;
  const cutoff = retentionCutoff(options.keepDays);
  const report: PruneReport = { dropped: 0, droppedBytes: 0, compressed: 0, compressedSavedBytes: 0, kept: 0, cutoff };
  sqlite.transaction(() => {
    markDroppable(sqlite, cutoff, options.jobs);
    const found = sqlite.prepare(`SELECT count(*) AS n, coalesce(sum(length(CAST(body AS BLOB))), 0) AS bytes FROM raw_responses WHERE id IN (SELECT id FROM temp.prune_ids)`).get() as { n: number; bytes: number };
    report.dropped = found.n;
    report.droppedBytes = found.bytes;
    if (!options.dryRun && found.n > 0) {
      sqlite.prepare(`DELETE FROM raw_responses WHERE id IN (SELECT id FROM temp.prune_ids)`).run();
      sqlite.prepare(WRITE_META_SQL.sqlite).get(RAW_PRUNED_KEY, new Date().toISOString());
    }
    sqlite.prepare(`DROP TABLE temp.prune_ids`).run();
    if (options.compressOld) Object.assign(report, compressOldBodies(sqlite, options.dryRun ?? false));
    const total = sqlite.prepare(`SELECT count(*) FROM raw_responses`).pluck().get() as number;
    report.kept = options.dryRun ? total - report.dropped : total;
  })();
  return report;
}

/**
 * The retention rule's ids, optionally of `jobNames`' tasks only (a subquery). One grouping pass, not a look-up per
 * body: raw_responses has no (operation, request_key) index, and the runs' writes are better off without one.
 */
export function supersededBodiesSql(params: { cutoff: string; jobNames?: string | undefined }): string {
  const ofJobs = params.jobNames === undefined ? '' : `AND r.task_id IN (SELECT id FROM tasks WHERE job IN (${params.jobNames}))`;
  return `SELECT r.id FROM raw_responses r
    JOIN (SELECT operation, request_key, max(id) AS id FROM raw_responses WHERE error_code IS NULL GROUP BY operation, request_key) latest
      ON latest.operation = r.operation AND latest.request_key = r.request_key
    WHERE r.received_at < ${params.cutoff} AND r.id < latest.id ${ofJobs}`;
}

/** The cutoff of a retention of `keepDays`: bodies received before it may go. */
export function retentionCutoff(keepDays: number): string {
  return new Date(Date.now() - keepDays * 86_400_000).toISOString();
}

/** temp.prune_ids: the bodies the rule drops. */
function markDroppable(sqlite: BetterSqlite3.Database, cutoff: string, jobs: readonly string[] | undefined): void {
  sqlite.prepare(`DROP TABLE IF EXISTS temp.prune_ids`).run();
  sqlite.prepare(`CREATE TEMP TABLE prune_ids (id INTEGER PRIMARY KEY)`).run();
  const jobNames = jobs === undefined ? undefined : 'SELECT value FROM json_each(@jobs)';
  sqlite
    .prepare(`INSERT INTO temp.prune_ids (id) ${supersededBodiesSql({ cutoff: '@cutoff', jobNames })}`)
    .run(jobs === undefined ? { cutoff } : { cutoff, jobs: JSON.stringify(jobs) });
}

/** Gzips, in keyset batches, the bodies stored as text (by an earlier netingest) where that makes them smaller. */
function compressOldBodies(sqlite: BetterSqlite3.Database, dryRun: boolean): Pick<PruneReport, 'compressed' | 'compressedSavedBytes'> {
  const page = sqlite.prepare(`SELECT id, body FROM raw_responses WHERE body_encoding IS NULL AND id > ? ORDER BY id LIMIT ?`);
  const update = sqlite.prepare(`UPDATE raw_responses SET body = ?, body_encoding = ? WHERE id = ?`);
  let compressed = 0;
  let saved = 0;
  for (let lastId = 0; ; ) {
    const rows = page.all(lastId, COMPRESS_BATCH) as Array<{ id: number; body: string | Buffer }>;
    if (rows.length === 0) break;
    for (const { id, body } of rows) {
      lastId = id;
      if (typeof body !== 'string') continue;
      const stored = encodeRawBody(body);
      if (stored.encoding === null) continue;
      compressed++;
      saved += Buffer.byteLength(body) - stored.body.length;
      if (!dryRun) update.run(stored.body, stored.encoding, id);
    }
  }
  return { compressed, compressedSavedBytes: saved };
}
