/**
 * answer_anomalies (ANSWER_ANOMALY_KINDS), written in the transaction of the answer's raw body and keyed by it, so that
 * reprocess rebuilds them from the bodies like the normalized tables.
 */
import type { Connection } from './connection.ts';
import type { RowAnomaly } from '../operations/stored-rows.ts';
import type { AnswerAnomalyKind } from './tables.ts';
import { rows, type Reads } from './read-steps.ts';
import { sql, param } from '../statement.ts';

export interface AnomalySource {
  rawResponseId: number;
  runId: number | null;
  taskId: number | null;
  operation: string;
  requestKey: string;
  at: string;
}

/** The insert's head on both engines; its rows are anomalyRow()'s. */
export const ANOMALY_HEAD = 'INSERT INTO answer_anomalies (raw_response_id, run_id, task_id, operation, request_key, kind, position, path, reason, asked_id, answered_id, at)';

export function anomalyRow(s: AnomalySource, a: RowAnomaly): unknown[] {
  return [s.rawResponseId, s.runId, s.taskId, s.operation, s.requestKey, a.kind, a.position, a.path, a.reason, a.askedId, a.answeredId, s.at];
}

/** Prepares the insert once; the returned function writes an answer's anomalies (caller's transaction). */
export function recordAnswerAnomalies(database: Connection): (source: AnomalySource, anomalies: readonly RowAnomaly[]) => void {
  const insert = database.sqlite.prepare(`${ANOMALY_HEAD} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  return (s, anomalies) => {
    for (const a of anomalies) insert.run(anomalyRow(s, a));
  };
}

/** The anomalies of a job's tasks in one run, by kind: the run summary's `setAside` and `otherPost`. */
export function* anomalyCountsReads(runId: number, job: string): Reads<Record<AnswerAnomalyKind, number>> {
  const found = yield* rows<{ kind: AnswerAnomalyKind; n: number }>(sql`SELECT a.kind AS kind, count(*) AS n
    FROM answer_anomalies a JOIN tasks t ON t.id = a.task_id WHERE a.run_id = ${param} AND t.job = ${param} GROUP BY a.kind`, [runId, job]);
  const counts: Record<AnswerAnomalyKind, number> = { no_identity: 0, other_post: 0 };
  for (const r of found) counts[r.kind] = r.n;
  return counts;
}

/** The set-aside records of a contract reading as anomalies. */
export function setAsideAnomalies(setAside: ReadonlyArray<{ position: number; path: string; reason: string }>): RowAnomaly[] {
  return setAside.map((r) => ({ kind: 'no_identity', position: r.position, path: r.path, reason: r.reason, askedId: null, answeredId: null }));
}
