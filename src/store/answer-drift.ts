/** answer_drift, so that `status` can tell a run's drift after it (operations/drift.ts counts it; the run writes it after each job). */
import type { Connection } from './connection.ts';
import type { StoredRow } from './tables.ts';
import { rows, value, type Reads } from './read-steps.ts';
import { sql, param } from '../statement.ts';

/** One row: `count` of `seen`. */
export type AnswerDriftRow = Omit<StoredRow<'answer_drift'>, 'run_id'>;

/** The upsert of one row (a run's counts so far replace its earlier ones): driftParams' values. */
export const SAVE_DRIFT_SQL = sql`INSERT INTO answer_drift (run_id, operation, path, kind, count, seen, detail)
  VALUES (${param}, ${param}, ${param}, ${param}, ${param}, ${param}, ${param})
  ON CONFLICT (run_id, operation, path, kind) DO UPDATE SET count = excluded.count, seen = excluded.seen, detail = excluded.detail`;

export const driftParams = (runId: number, r: AnswerDriftRow) => [runId, r.operation, r.path, r.kind, r.count, r.seen, r.detail];

/** Prepares the upsert once; the returned function writes a run's counts so far for one operation. */
export function saveAnswerDrift(database: Connection): (runId: number, rows: readonly AnswerDriftRow[]) => void {
  const upsert = database.sqlite.prepare(SAVE_DRIFT_SQL.sqlite);
  return database.sqlite.transaction((runId: number, rows: readonly AnswerDriftRow[]) => {
    for (const r of rows) upsert.run(driftParams(runId, r));
  });
}

/** The last run with answers (a 200): its id and drift, empty if they matched the spec; null if no run had answers. */
export function* lastRunDriftReads(): Reads<{ runId: number; rows: AnswerDriftRow[] } | null> {
  const runId = (yield* value<number | null>(`SELECT max(run_id) FROM api_calls WHERE status = 200 AND run_id IS NOT NULL`)) ?? null;
  if (runId === null) return null;
  const drift = yield* rows<AnswerDriftRow>(
    sql`SELECT operation, path, kind, count, seen, detail FROM answer_drift WHERE run_id = ${param} ORDER BY operation, path, kind`,
    [runId],
  );
  return { runId, rows: drift };
}
