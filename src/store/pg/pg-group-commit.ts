/**
 * One group of outcomes written on PostgreSQL, in the caller's transaction, in two round trips however many
 * outcomes it holds: the raw bodies in one multi-row INSERT (their ids are the anomalies' and the order's
 * check), then every answer's normalized rows (gathered in one PgRowBatch: a few multi-row statements per table),
 * the anomalies, the api_calls rows and the task updates (one UPDATE ... FROM VALUES per round of distinct
 * tasks), sent together as one multi-statement query (pg-literal-sql.ts). A stored row an answer reads back
 * costs one more round trip, rare. What ends stored is what writing the outcomes one by one, in order, stored: rows get their ids in
 * the outcomes' order, a row two answers touch ends as the later one left it, a task settled twice ends as
 * the second settlement left it (attempts added up).
 */
import type pg from 'pg';
import type { ApiCallRow } from '../api-calls.ts';
import { requestKeyOf } from '../ingest-request.ts';
import type { OutcomeOp } from '../outcome-ops.ts';
import { ANOMALY_HEAD, candidateWrites, createPgAnswerStore } from './pg-answer-store.ts';
import { PgRowBatch, roundsByKey } from './pg-row-batch.ts';
import { runStatements, sqlLiteral, valuesSql } from './pg-literal-sql.ts';
import { CHANGES_HEAD, ChangeRecorder, changeValues } from '../history/record-changes.ts';
import { foldedReadSql, plannedReads, replayReads } from './pg-folded-reads.ts';
import { STORE_TYPES } from './reader-values.ts';

type PaidOp = Extract<OutcomeOp, { kind: 'success' | 'rejected' }>;

/** A task's outcome, as ledger.ts's markDone / markNotFound / markFailed write it. */
interface Settlement {
  id: number;
  status: 'done' | 'not_found' | 'failed';
  attempts: number;
  code: string | null;
  message: string | null;
  retryable: number | null;
  at: string;
}

/**
 * The writer of one run's groups: `(client, ops)` writes a group in the caller's transaction; with `ownTransaction`
 * it opens the transaction in its first query and commits it in its last (BEGIN and COMMIT were two round trips
 * of the group's six), and the caller rolls back on a throw (withPgClient).
 */
export function createPgGroupCommit(runId: number): (client: pg.ClientBase, ops: readonly OutcomeOp[], ownTransaction?: boolean) => Promise<void> {
  const answers = createPgAnswerStore();
  return async (client, ops, ownTransaction = false) => {
    const paid = ops.filter((op): op is PaidOp => op.kind === 'success' || op.kind === 'rejected');
    const batch = new PgRowBatch();
    const history = new ChangeRecorder();
    // What the group's answers change is read before any of their rows is written (one statement per table), in
    // the raw bodies' query: the read of the group's keys does not depend on what it reads (pg-folded-reads.ts).
    const candidates = paid.flatMap((op) => (op.kind === 'success' ? candidateWrites(op) : []));
    const planned = plannedReads(new ChangeRecorder().prefetch(candidates));
    const { rawIds, read } = await saveRawBodies(client, paid, runId, { begin: ownTransaction, reads: foldedReadSql(planned) });
    replayReads(history.prefetch(candidates), planned, read);
    const anomalies: unknown[][] = [];
    for (const [i, op] of paid.entries()) {
      if (op.kind !== 'success') continue;
      const input = {
        rawResponseId: rawIds[i]!, runId, taskId: op.taskId, operation: op.operation, requestKey: op.requestKey, request: op.request, answer: op.answer, setAside: op.setAside, at: op.at,
      };
      anomalies.push(...(await answers.collect(client, batch, input, history)).anomalies);
    }
    const { changes, withdrawn } = history.take();
    await runStatements(client, [
      ...batch.take(),
      valuesSql(ANOMALY_HEAD, anomalies),
      callsSql(ops.flatMap((op) => ('call' in op ? [op.call] : []))),
      ...settleSql(runId, ops.flatMap(settlementOf)),
      withdrawn.length > 0 ? `DELETE FROM changes WHERE id IN (${withdrawn.map(sqlLiteral).join(', ')})` : null,
      valuesSql(CHANGES_HEAD, changes.map(changeValues)),
      ownTransaction ? 'COMMIT' : null,
    ]);
  };
}

const RAW_HEAD = 'INSERT INTO raw_responses (operation, request_key, request_json, body, body_encoding, received_at, run_id, task_id, error_code)';

/**
 * The bodies as received, as text (body_encoding NULL: PostgreSQL compresses large values itself); their ids in
 * `paid`'s order. One statement's rows take their ids in the order of its VALUES, so the returned ids sorted are
 * that order, which their task ids confirm. One query, the values as literals: BEGIN first when asked, and the
 * folded reads after (their rows returned in order).
 */
async function saveRawBodies(client: pg.ClientBase, paid: readonly PaidOp[], runId: number, with_: { begin: boolean; reads: readonly string[] }): Promise<{ rawIds: number[]; read: unknown[][] }> {
  const rows = paid.map((op) => [
    op.operation, op.requestKey ?? requestKeyOf(op.request), JSON.stringify(op.request), op.body, null, op.at, runId, op.taskId, op.kind === 'rejected' ? op.code : null,
  ]);
  const insert = valuesSql(RAW_HEAD, rows, ' RETURNING id, task_id');
  const results = await runStatements(client, [with_.begin ? 'BEGIN' : null, insert, ...with_.reads], STORE_TYPES);
  const skip = (with_.begin ? 1 : 0) + (insert === null ? 0 : 1);
  const got = (insert === null ? [] : results[skip - 1]!.rows) as Array<{ id: number; task_id: number }>;
  const sorted = got.map((r) => ({ id: Number(r.id), taskId: Number(r.task_id) })).sort((a, b) => a.id - b.id);
  if (sorted.some((r, i) => r.taskId !== paid[i]!.taskId)) throw new Error('internal: raw_responses ids out of the order of their rows');
  // PREPARE, EXECUTE, DEALLOCATE per read: the EXECUTEs' rows.
  const read = results.slice(skip).filter((_, i) => i % 3 === 1).map((r) => r.rows as unknown[]);
  return { rawIds: sorted.map((r) => r.id), read };
}

const CALL_HEAD = 'INSERT INTO api_calls (run_id, task_id, operation, method, path, status, error_code, latency_ms, total_credits, credits_used, credits_remaining, at)';

function callsSql(calls: readonly ApiCallRow[]): string | null {
  return valuesSql(CALL_HEAD, calls.map((r) => [r.runId, r.taskId, r.operation, r.method, r.path, r.status, r.errorCode, r.latencyMs, r.totalCredits, r.creditsUsed, r.creditsRemaining, r.at]));
}

function settlementOf(op: OutcomeOp): Settlement[] {
  const base = { id: 0, code: null, message: null, retryable: null };
  switch (op.kind) {
    case 'success':
      return [{ ...base, id: op.taskId, status: 'done', attempts: op.attempts, at: op.at }];
    case 'rejected':
      return [{ id: op.taskId, status: 'failed', attempts: op.attempts, code: op.code, message: op.message.slice(0, 1000), retryable: 0, at: op.at }];
    case 'not_found':
      return [{ ...base, id: op.taskId, status: 'not_found', attempts: op.attempts, message: op.note, at: op.at }];
    case 'past_last_page':
      return [{ ...base, id: op.taskId, status: 'not_found', attempts: 0, message: `past the last page (${op.lastPage})`, at: op.at }];
    case 'failed':
      return [{ id: op.taskId, status: 'failed', attempts: op.attempts, code: op.code, message: op.message.slice(0, 1000), retryable: op.retryable ? 1 : 0, at: op.at }];
    case 'attempt_failed':
      return [];
  }
}

/** The settlement's columns and their types: the first row of a VALUES list names them, the casts type them. */
const SETTLE_COLUMNS: ReadonlyArray<[keyof Settlement, string]> = [
  ['id', 'bigint'], ['status', 'text'], ['attempts', 'integer'], ['code', 'text'], ['message', 'text'], ['retryable', 'smallint'], ['at', 'timestamptz'],
];

/** The tasks' outcomes, one UPDATE per round of distinct tasks (an UPDATE ... FROM changes a row once). */
function settleSql(runId: number, settlements: readonly Settlement[]): string[] {
  return roundsByKey(settlements, (s) => String(s.id)).map((round) => {
    const values = round.map((s) => `(${SETTLE_COLUMNS.map(([k, type]) => `${sqlLiteral(s[k])}::${type}`).join(', ')})`);
    return `UPDATE tasks AS t SET status = v.status, attempts = t.attempts + v.attempts, last_error_code = v.code, last_error = v.message,
    retryable = v.retryable, updated_at = v.at, completed_at = CASE WHEN v.status = 'failed' THEN NULL ELSE v.at END, run_id = ${sqlLiteral(runId)}::bigint
  FROM (VALUES ${values.join(', ')}) AS v(${SETTLE_COLUMNS.map(([k]) => k).join(', ')})
  WHERE t.id = v.id`;
  });
}
