/**
 * What `reprocess` asks of the engine: the archive read a page at a time and the rebuild written, inside the one
 * transaction its implementation opens. The replay (runner/reprocess.ts) awaits each answer, whichever engine.
 */
import type { Awaitable } from './run-store.ts';
import type { ListEnd, StoredAnswer } from './outcome-ops.ts';
import { OPERATION_SPECS } from '../operations/index.ts';
import { dialect, literal, param, sql } from '../statement.ts';

/** archivePage's statement: $1 after id, $2 limit. */
export const ARCHIVE_PAGE_SQL = sql`SELECT id, operation, request_key AS "requestKey", ${dialect({ sqlite: 'request_json', postgres: 'request_json::text' })} AS "requestJson",
    body, body_encoding AS "bodyEncoding", received_at AS "receivedAt", task_id AS "taskId", run_id AS "runId", error_code AS "errorCode"
  FROM raw_responses WHERE id > ${param} ORDER BY id LIMIT ${param}`;

/** The operations whose answers are pages of a list, quoted for SQL. */
const LIST_OPERATIONS = Object.values(OPERATION_SPECS).filter((spec) => 'listPage' in spec).map((spec) => `'${spec.name}'`).join(', ');

/**
 * listEndsPage's statement ($1 after id, $2 limit): the 404s a list's task took as its answer (a 404 not read as one is
 * a failed attempt, with its error code), with the task's request, in id order.
 */
export const LIST_ENDS_PAGE_SQL = sql`SELECT c.id, c.run_id AS "runId", c.task_id AS "taskId", c.at, t.operation, t.input_key AS "inputKey",
    ${dialect({ sqlite: 't.request_json', postgres: 't.request_json::text' })} AS "requestJson"
  FROM api_calls c JOIN tasks t ON t.id = c.task_id
  WHERE c.id > ${param} AND c.status = 404 AND c.error_code IS NULL AND t.operation IN (${literal(LIST_OPERATIONS)})
  ORDER BY c.id LIMIT ${param}`;

/** A 404 that ended a list, as the replay reads it from api_calls and its task (times as ISO text). */
export interface ArchivedListEnd {
  id: number;
  runId: number | null;
  taskId: number;
  at: string;
  operation: string;
  inputKey: string;
  requestJson: string;
}

/** bodiesWerePruned's statement: a row when prune ever dropped bodies. */
export const WERE_PRUNED_SQL = `SELECT 1 FROM netingest_meta WHERE key = 'raw_pruned_at'`;

export const CLEAR_KEPT_ANOMALIES_SQL = 'DELETE FROM answer_anomalies WHERE raw_response_id IN (SELECT id FROM raw_responses)';

/** One raw_responses row as the replay reads it (times as ISO text, ids as numbers). */
export interface ArchivedBody {
  id: number;
  operation: string;
  requestKey: string;
  requestJson: string;
  body: string | Buffer;
  bodyEncoding: string | null;
  receivedAt: string;
  taskId: number | null;
  runId: number | null;
  errorCode: string | null;
}

/** The engine's reads and writes, each inside the transaction the implementation opened. */
export interface ReprocessStore {
  /** Whether prune ever dropped bodies (the `raw_pruned_at` meta key). */
  bodiesWerePruned(): Awaitable<boolean>;
  /** Empties the normalized tables; the rows deleted. */
  clearNormalizedTables(): Awaitable<number>;
  /** Deletes the anomalies of the bodies still kept (those of a pruned body stay, as its rows do). */
  clearKeptBodiesAnomalies(): Awaitable<void>;
  /** Up to `limit` raw_responses rows with an id above `afterId`, in id order. */
  archivePage(afterId: number, limit: number): Awaitable<ArchivedBody[]>;
  /** Up to `limit` 404s that ended a list (LIST_ENDS_PAGE_SQL) with an api_calls id above `afterId`, in id order. */
  listEndsPage(afterId: number, limit: number): Awaitable<ArchivedListEnd[]>;
  /** Records what a 404 ending a list removes, as a run records it (outcome-ops.ts's storeListEnd). */
  storeListEnd(end: ListEnd): Awaitable<void>;
  /** Opens the savepoint one body is written in. */
  savepoint(): Awaitable<void>;
  /** Keeps what the body wrote. */
  releaseSavepoint(): Awaitable<void>;
  /** Undoes what the body wrote, and closes the savepoint. */
  rollbackToSavepoint(): Awaitable<void>;
  /** Stores one body's answer, as its contract read it, as a run stores it (outcome-ops.ts); the row writes. */
  storeAnswer(input: StoredAnswer): Awaitable<number>;
  /** Marks an archived body as an answer: error_code cleared. */
  acceptBody(rawId: number): Awaitable<void>;
  /** ledger.ts's markRecovered: the failed task set done by this body when it is still its latest outcome. */
  markRecovered(taskId: number, rawId: number, code: string, receivedAt: string, at: string): Awaitable<boolean>;
}
