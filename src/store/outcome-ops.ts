/** Call outcomes as plain data, and the one function filing them; the run's writer applies a batch per transaction. */
import type { Connection } from './connection.ts';
import type { AnySubject } from '../operations/index.ts';
import { recordAnswerAnomalies, setAsideAnomalies, type AnomalySource } from './answer-anomalies.ts';
import { createIngestor, type IngestResult } from './ingest/index.ts';
import { listPageOf } from './ingest/tables.ts';
import { storeChanges, type AnswerWrites } from './history/record-changes.ts';
import { readSync, type Reads } from './read-steps.ts';
import { saveRawResponse, type RawResponseInput } from './raw-archive.ts';
import { saveApiCall, type ApiCallRow } from './api-calls.ts';
import { createLedger } from './ledger.ts';
import type { Operation } from '../spec/types.ts';
import type { SetAsideRecord } from '../operations/answer-contract.ts';

/** One answer to store as its contract read it, and where it came from (its raw_responses row). */
export interface StoredAnswer extends AnomalySource {
  request: AnySubject;
  /** The body as read through its operation's answer contract. */
  answer: unknown;
  setAside: readonly SetAsideRecord[];
  /** Its page ends the input's list (the contract's lastPage): the history removes the members of later pages. */
  endsList?: boolean | undefined;
}

/**
 * Stores one 200 answer as its contract read it, anomalies included, in the caller's transaction. The run's writer and
 * reprocess both store through here, so a body stored live and one recovered later are stored alike.
 */
export function prepareAnswerStore(database: Connection): (input: StoredAnswer) => IngestResult {
  const ingestor = createIngestor(database);
  const record = recordAnswerAnomalies(database);
  return (input) => {
    const result = ingestor.ingestAnswer(input.request, input.answer, input.at, { runId: input.runId ?? null, taskId: input.taskId ?? null, endsList: input.endsList });
    record(input, [...setAsideAnomalies(input.setAside), ...(result.anomalies ?? [])]);
    return result;
  };
}

/** A 404 that ended a paged list: it writes no row, but the history removes what the list lost (reprocess replays it). */
export interface ListEnd {
  request: AnySubject;
  runId: number | null;
  taskId: number | null;
  at: string;
}

/** The history's input for a 404 ending a list; null when its operation has no list. */
export function listEndWrites({ request, runId, taskId, at }: ListEnd): AnswerWrites | null {
  const list = listPageOf(request);
  return list ? { writes: [], runId, taskId, at, endsList: true, list } : null;
}

/** Records what a 404 ending a paged list removes (it writes no row), in the caller's transaction; reprocess replays it. */
export function* storeListEnd(end: ListEnd): Reads<void> {
  const answer = listEndWrites(end);
  if (answer) yield* storeChanges(answer);
}

/** A paid 200 as it travels to the writer: the task, the request it answered and the body as received. */
interface PaidBody {
  taskId: number;
  operation: Operation;
  requestKey: string;
  request: AnySubject;
  /** The body exactly as received (after token redaction). */
  body: string;
  call: ApiCallRow;
  attempts: number;
  at: string;
}

/**
 * The input's later due pages, settled past the last page (`lastPage`, this answer's) in the same transaction as the
 * answer that ends the list: a crash between the two would leave them due, and the next run would pay for them.
 */
export interface PastLast {
  taskIds: readonly number[];
  lastPage: number;
}

/** One thing to write; `at` is the ISO time the outcome was known. */
export type OutcomeOp =
  /** A 200 its contract read: rows (from `answer`), raw body, anomalies, api_calls row, task done: all or nothing. */
  | ({ kind: 'success'; answer: unknown; setAside: readonly SetAsideRecord[]; endsList?: boolean; pastLast?: PastLast | undefined } & PaidBody)
  /** A paid wrong-shape 200: body archived with error_code, api_calls row, task failed: all or nothing (reprocess). */
  | ({ kind: 'rejected'; code: string; message: string } & PaidBody)
  /** A 404: no row, but a paged list's (`request` given) ends there, for the history; with its later pages (PastLast). */
  | { kind: 'not_found'; taskId: number; call: ApiCallRow; attempts: number; note: string | null; at: string; request?: AnySubject; pastLast?: PastLast | undefined }
  | { kind: 'attempt_failed'; call: ApiCallRow }
  | { kind: 'failed'; taskId: number; code: string; message: string; retryable: boolean; attempts: number; at: string };

/** A task's outcome as its row takes it (ledger.ts's settle on SQLite, pg/pg-group-commit.ts's settleSql). */
export interface Settlement {
  id: number;
  status: 'done' | 'not_found' | 'failed';
  attempts: number;
  code: string | null;
  message: string | null;
  retryable: number | null;
  at: string;
}

/** How an outcome settles its task; null for a failed attempt, which settles nothing. */
export function settlementOf(op: OutcomeOp): Settlement | null {
  switch (op.kind) {
    case 'success':
      return settlement(op.taskId, 'done', op.attempts, null, null, null, op.at);
    case 'rejected':
      return settlement(op.taskId, 'failed', op.attempts, op.code, op.message.slice(0, 1000), 0, op.at);
    case 'not_found':
      return settlement(op.taskId, 'not_found', op.attempts, null, op.note, null, op.at);
    case 'failed':
      return settlement(op.taskId, 'failed', op.attempts, op.code, op.message.slice(0, 1000), op.retryable ? 1 : 0, op.at);
    case 'attempt_failed':
      return null;
  }
}

/** How an outcome settles its task and, for an answer ending a list, the input's later pages (PastLast). */
export function settlementsOf(op: OutcomeOp): Settlement[] {
  const own = settlementOf(op);
  if (own === null) return [];
  const past = 'pastLast' in op ? op.pastLast : undefined;
  if (past === undefined) return [own];
  // A page after the one ending its input's list: not found, without a call.
  return [own, ...past.taskIds.map((id) => settlement(id, 'not_found', 0, null, `past the last page (${past.lastPage})`, null, own.at))];
}

/** One object shape for every kind: the statements reading settlements see one map, not five (spread objects differ). */
function settlement(id: number, status: Settlement['status'], attempts: number, code: string | null, message: string | null, retryable: number | null, at: string): Settlement {
  return { id, status, attempts, code, message, retryable, at };
}

/** Prepares the statements once; the returned function writes one outcome, in the caller's transaction. */
export function prepareOutcomeWrite(database: Connection, runId: number): (op: OutcomeOp) => void {
  const store = prepareAnswerStore(database);
  const saveRaw = saveRawResponse(database);
  const saveCall = saveApiCall(database);
  const ledger = createLedger(database);
  return (op: OutcomeOp): void => {
    // A paid body is archived first: the answer's anomalies name its row.
    const rawResponseId = op.kind === 'success' || op.kind === 'rejected' ? saveRaw(rawInputOf(op, runId)) : 0;
    if (op.kind === 'success') store(storedAnswerOf(op, runId, rawResponseId));
    if (op.kind === 'not_found' && op.request) readSync(database.sqlite, storeListEnd({ request: op.request, runId, taskId: op.taskId, at: op.at }));
    if ('call' in op) saveCall(op.call);
    for (const settled of settlementsOf(op)) ledger.settle(settled, runId);
  };
}

/** A paid outcome's body as raw_responses archives it (a rejected one with its error code), on either engine. */
export function rawInputOf(op: Extract<OutcomeOp, { kind: 'success' | 'rejected' }>, runId: number): RawResponseInput {
  return { operation: op.operation, requestKey: op.requestKey, request: op.request, body: op.body, receivedAt: op.at, runId, taskId: op.taskId, errorCode: op.kind === 'rejected' ? op.code : null };
}

/** A 200's answer as the store takes it, filed under its raw_responses row, on either engine. */
export function storedAnswerOf(op: Extract<OutcomeOp, { kind: 'success' }>, runId: number, rawResponseId: number): StoredAnswer {
  return { rawResponseId, runId, taskId: op.taskId, operation: op.operation, requestKey: op.requestKey, request: op.request, answer: op.answer, setAside: op.setAside, endsList: op.endsList, at: op.at };
}
