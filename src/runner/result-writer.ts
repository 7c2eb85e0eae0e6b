import type { ApiCallInfo, ApiResult } from '../api/types.ts';
import type { ApiError } from '../api/errors.ts';
import type { Database } from '../db/open.ts';
import { createIngestor } from '../db/ingest/index.ts';
import { saveRawResponse } from '../db/raw-archive.ts';
import { createApiCallLog, type ApiCallRow } from '../db/api-calls.ts';
import { createLedger } from '../db/ledger.ts';
import type { Operation } from '../spec/types.ts';
import type { IngestRequest } from '../db/ingest-request.ts';

/** What the writer needs of a task. */
export interface WriterTask {
  id: number;
  operation: Operation;
}

/**
 * Writes the outcome of every call. Each response's normalized rows, raw body, task status and api_calls row
 * go into the same transaction; outcomes that arrive in the same turn of the event loop share one transaction
 * (group commit), which keeps a busy run from paying a commit per response. A crash loses at most the
 * responses of that one turn, all of which were in flight, so the next run repeats at most those calls.
 */
export class ResultWriter {
  private pending: Array<() => void> = [];
  private scheduled = false;
  private failure: unknown = null;
  private readonly ingestor;
  private readonly saveRaw;
  private readonly calls;
  private readonly ledger;
  private readonly commit: (ops: Array<() => void>) => void;

  constructor(
    database: Database,
    private readonly runId: number,
    /** Called once if a commit fails (disk full, read-only file): the run must stop. */
    private readonly onFatal: (err: unknown) => void,
  ) {
    this.ingestor = createIngestor(database);
    this.saveRaw = saveRawResponse(database);
    this.calls = createApiCallLog(database);
    this.ledger = createLedger(database);
    this.commit = database.sqlite.transaction((ops: Array<() => void>) => {
      for (const op of ops) op();
    });
  }

  /** A 200: normalized rows, raw body, api_calls row and the task done, atomically. */
  success(task: WriterTask, request: IngestRequest, requestKey: string, result: Extract<ApiResult<unknown>, { kind: 'ok' }>, attempts: number): void {
    const at = new Date().toISOString();
    this.enqueue(() => {
      this.ingestor.ingest(request, result.data as never, at);
      this.saveRaw({ operation: task.operation, requestKey, request, body: result.raw, receivedAt: at, runId: this.runId, taskId: task.id });
      this.calls.insert(callRow(this.runId, task.id, result.call, at, null, result.credits));
      this.ledger.markDone(task.id, this.runId, at, attempts);
    });
  }

  /** A 404: the lookup found nothing, which is an answer, not a failure. */
  notFound(task: WriterTask, call: ApiCallInfo, attempts: number, note: string | null): void {
    const at = new Date().toISOString();
    this.enqueue(() => {
      this.calls.insert(callRow(this.runId, task.id, call, at, null, null));
      this.ledger.markNotFound(task.id, this.runId, at, attempts, note);
    });
  }

  /** Later pages of an input whose list ended earlier: settled without a call. */
  pastLastPage(task: WriterTask, lastPage: number): void {
    const at = new Date().toISOString();
    this.enqueue(() => this.ledger.markNotFound(task.id, this.runId, at, 0, `past the last page (${lastPage})`));
  }

  /** One failed HTTP attempt, for the api_calls log. */
  attemptFailed(task: WriterTask, err: ApiError): void {
    const at = new Date().toISOString();
    this.enqueue(() => this.calls.insert(callRow(this.runId, task.id, err.call, at, err.code, null)));
  }

  /** The task failed for good in this run; `retryable` failures are picked up again by the next run. */
  failed(task: WriterTask, code: string, message: string, retryable: boolean, attempts: number): void {
    const at = new Date().toISOString();
    this.enqueue(() => this.ledger.markFailed(task.id, this.runId, at, attempts, code, message, retryable));
  }

  /** Commits everything queued now; throws what the commit threw. */
  flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const ops = this.pending;
    this.pending = [];
    this.commit(ops);
  }

  /** The commit error that stopped the writer, if any. */
  get error(): unknown {
    return this.failure;
  }

  private enqueue(op: () => void): void {
    if (this.failure) return;
    this.pending.push(op);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      try {
        this.flush();
      } catch (err) {
        this.failure = err;
        this.pending = [];
        this.onFatal(err);
      }
    });
  }
}

function callRow(
  runId: number,
  taskId: number,
  call: Partial<ApiCallInfo>,
  at: string,
  errorCode: string | null,
  credits: { total_credits: number; credits_used: number; credits_remaining: number } | null,
): ApiCallRow {
  return {
    runId,
    taskId,
    operation: call.operation ?? 'unknown',
    method: call.method ?? 'GET',
    path: call.path ?? '',
    status: call.status ?? null,
    errorCode,
    latencyMs: call.latencyMs ?? null,
    totalCredits: credits?.total_credits ?? null,
    creditsUsed: credits?.credits_used ?? null,
    creditsRemaining: credits?.credits_remaining ?? null,
    at,
  };
}
