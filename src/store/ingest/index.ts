/**
 * Writes a validated 200 body into the normalized tables (its spec maps it to rows, row-writer.ts writes them). The
 * caller owns the transaction, so an answer, its raw body, task status and api_calls row commit together.
 */
import type { Connection } from '../connection.ts';
import type { AnySubject } from '../../operations/index.ts';
import { rowCount, type RowAnomaly, type RowContext } from '../../operations/stored-rows.ts';
import { networkHost } from '../../urls/canonical.ts';
import { NORMALIZED_TABLES } from '../tables.ts';
import { answerRows, listPageOf } from './tables.ts';
import { FORGET_PROOFS_SQL, preparePostDateOrder } from './post-date-order.ts';
import { prepareRowWriter, prepareStoredLookup } from './row-writer.ts';
import { storeChanges } from '../history/record-changes.ts';
import { readSync } from '../read-steps.ts';
import type { AnomalySource } from '../answer-anomalies.ts';

export interface IngestResult {
  /** Rows inserted or updated, over every normalized table. */
  rows: number;
  /** Records left out because they carry no URL or id to key them by (none in valid responses). */
  skipped: number;
  /** What the answer held that was not stored as asked (a post answer naming another post): see answer_anomalies. */
  anomalies?: RowAnomaly[];
}

/** The run and task an answer came from (its changes are filed under them), and whether its page ends the list. */
type ChangeSource = Pick<AnomalySource, 'runId' | 'taskId'> & { endsList?: boolean | undefined };

export { NORMALIZED_TABLES };

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** Writes validated responses into the normalized tables; prepares the statements once. */
export function createIngestor(database: Connection) {
  const { sqlite } = database;
  const postDates = preparePostDateOrder(sqlite);
  // posts.posted_on: the raw day read in the order the dataset's posts show (post-date-order.ts).
  const write = prepareRowWriter(sqlite, { posts: { posted_on: (row) => postDates.isoOf(row['posted_raw']) } });
  const ctx: RowContext = { seenAt: '', networkHost: networkHost(), stored: prepareStoredLookup(sqlite) };
  /**
   * Upserts one answer as its contract read it; every timestamp written is `seenAt` (ISO-8601 UTC), so a replay
   * reproduces them. With `source`, its changes go to the history first. Throws outside a caller's transaction.
   */
  const ingestAnswer = (subject: AnySubject, answer: unknown, seenAt: string, source?: ChangeSource): IngestResult => {
    if (!sqlite.inTransaction) {
      throw new Error('ingest() must run inside a transaction (the caller commits the response with its bookkeeping)');
    }
    // The one check of the time every answer's rows are stored with: the one format every *_at column holds.
    if (typeof seenAt !== 'string' || !ISO_UTC.test(seenAt)) {
      throw new TypeError(`seenAt must be an ISO-8601 UTC timestamp such as 2026-11-22T13:45:00.000Z, got ${String(seenAt)}`);
    }
    ctx.seenAt = seenAt;
    const stored = answerRows(subject, answer, ctx);
    if (source) {
      const list = listPageOf(subject, ctx.networkHost);
      readSync(sqlite, storeChanges({ writes: stored.writes, runId: source.runId, taskId: source.taskId, at: seenAt, endsList: source.endsList, list }));
    }
    for (const w of stored.writes) write(w);
    const result = { rows: rowCount(stored), skipped: stored.skipped };
    return stored.anomalies.length > 0 ? { ...result, anomalies: stored.anomalies } : result;
  };
  return { ingestAnswer };
}

/** What reprocess empties with the normalized tables, the history and the day order: it rebuilds them from the raw archive. */
export const CLEAR_DERIVED_SQL = ['DELETE FROM changes', FORGET_PROOFS_SQL];

/** Empties the normalized tables (counted) and what derives from them (CLEAR_DERIVED_SQL), not bookkeeping or raw_responses; caller's transaction. */
export function clearNormalizedTables(database: Connection): number {
  let rows = 0;
  for (const table of NORMALIZED_TABLES) rows += database.sqlite.prepare(`DELETE FROM ${table}`).run().changes;
  for (const text of CLEAR_DERIVED_SQL) database.sqlite.prepare(text).run();
  return rows;
}
