/**
 * The outcomes of calls as plain data, and the one function that files them in the database. The run's
 * writer (result-writer.ts) gathers them and applies each batch in one transaction.
 */
import type { Connection } from './connection.ts';
import type { AnySubject } from '../operations/index.ts';
import { prepareAnswerStore } from './store-answer.ts';
import { saveRawResponse } from './raw-archive.ts';
import { createApiCallLog, type ApiCallRow } from './api-calls.ts';
import { createLedger } from './ledger.ts';
import type { Operation } from '../spec/types.ts';
import type { SetAsideRecord } from '../operations/answer-contract.ts';

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

/** One thing to write; `at` is the ISO time the outcome was known. */
export type OutcomeOp =
  /**
   * A 200 its answer contract read: normalized rows (from `answer`, as the client read it), raw body, anomalies,
   * api_calls row and the task done, all or nothing.
   */
  | ({ kind: 'success'; answer: unknown; setAside: readonly SetAsideRecord[] } & PaidBody)
  /**
   * A paid 200 of the wrong shape: the body archived as not an answer (error_code), its api_calls row and the
   * task failed for good, all or nothing, so the body can be recovered by reprocess without a call.
   */
  | ({ kind: 'rejected'; code: string; message: string } & PaidBody)
  | { kind: 'not_found'; taskId: number; call: ApiCallRow; attempts: number; note: string | null; at: string }
  | { kind: 'past_last_page'; taskId: number; lastPage: number; at: string }
  | { kind: 'attempt_failed'; call: ApiCallRow }
  | { kind: 'failed'; taskId: number; code: string; message: string; retryable: boolean; attempts: number; at: string };

/** Prepares the statements once; the returned function writes one outcome, in the caller's transaction. */
export function prepareOutcomeWrite(database: Connection, runId: number): (op: OutcomeOp) => void {
  const store = prepareAnswerStore(database);
  const saveRaw = saveRawResponse(database);
  const calls = createApiCallLog(database);
  const ledger = createLedger(database);
  const rawOf = (op: PaidBody) => ({ operation: op.operation, requestKey: op.requestKey, request: op.request, body: op.body, receivedAt: op.at, runId, taskId: op.taskId });
  return (op: OutcomeOp): void => {
    switch (op.kind) {
      case 'success': {
        const rawResponseId = saveRaw(rawOf(op));
        store({ rawResponseId, runId, taskId: op.taskId, operation: op.operation, requestKey: op.requestKey, request: op.request, answer: op.answer, setAside: op.setAside, at: op.at });
        calls.insert(op.call);
        ledger.markDone(op.taskId, runId, op.at, op.attempts);
        return;
      }
      case 'rejected':
        saveRaw({ ...rawOf(op), errorCode: op.code });
        calls.insert(op.call);
        ledger.markFailed(op.taskId, runId, op.at, op.attempts, op.code, op.message, false);
        return;
      case 'not_found':
        calls.insert(op.call);
        ledger.markNotFound(op.taskId, runId, op.at, op.attempts, op.note);
        return;
      case 'past_last_page':
        ledger.markNotFound(op.taskId, runId, op.at, 0, `past the last page (${op.lastPage})`);
        return;
      case 'attempt_failed':
        calls.insert(op.call);
        return;
      case 'failed':
        ledger.markFailed(op.taskId, runId, op.at, op.attempts, op.code, op.message, op.retryable);
        return;
    }
  };
}
