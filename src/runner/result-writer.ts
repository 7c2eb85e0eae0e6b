import type { ApiCallInfo, ApiResult } from '../api/types.ts';
import { ApiSchemaError, type ApiError } from '../api/errors.ts';
import type { ApiCallRow } from '../store/api-calls.ts';
import type { Connection } from '../store/connection.ts';
import type { Operation } from '../spec/types.ts';
import type { IngestRequest } from '../store/ingest-request.ts';
import type { RunLock } from '../store/run-lock.ts';
import { startWalCheckpointer, type WalCheckpointer } from '../store/wal-checkpointer.ts';
import { prepareOutcomeWrite, type OutcomeOp } from './outcome-ops.ts';

/** What the writer needs of a task. */
export interface WriterTask {
  id: number;
  operation: Operation;
}

/** Settings of the writer; every default is here. */
export const RESULT_WRITER_DEFAULTS = {
  /** Outcomes gathered at most before they are committed at once, without waiting for the loop's next turn. */
  maxBatch: 256,
  /**
   * Frames in the write-ahead log at which the connection checkpoints by itself (SQLite's default: 1000). The
   * checkpointer thread does the checkpoints; this is only the backstop that bounds the log (64 MB), since a
   * log written without pause is never fully copied by PASSIVE checkpoints and so never starts over.
   */
  walAutocheckpointPages: 16384,
  /** SQLite's own, set back when the writer closes. */
  walAutocheckpointPagesAfter: 1000,
} as const;

/**
 * Files the outcome of every call on the run's own connection, in group commits: the outcomes that arrive
 * in one turn of the event loop (every answer read in that turn) are written at its end in one IMMEDIATE
 * transaction, or at once when `maxBatch` are gathered. Each response's normalized rows, raw body, task status
 * and api_calls row are in the same transaction. An outcome's promise resolves once it is committed: the runner
 * holds the task's slot until then, so a crash at any instant loses at most `concurrency` answers, each one a
 * call that the next run repeats. With the run's lock, each commit first checks, in its transaction, that the
 * lock is still the run's (RunLock.whileHeld): a run suspended while another took the lock over stores nothing
 * when it wakes up. The WAL checkpointer thread (store/wal-checkpointer.ts) copies the log into the file
 * beside it, so that the commits never wait for a checkpoint's fsyncs.
 *
 * A writer thread did this before, measured no faster at the provider's 10,000 calls a minute nor flat out
 * (bench/writer.bench.ts, bench/README.md).
 */
export class ResultWriter {
  private readonly checkpointer: WalCheckpointer;
  private readonly commit: (ops: readonly OutcomeOp[]) => void;
  private batch: OutcomeOp[] = [];
  /** Resolves the waiters of the batch being gathered once it is committed (or the writer failed). */
  private release: (() => void) | null = null;
  private batchCommitted: Promise<void> | null = null;
  private scheduled: NodeJS.Immediate | null = null;
  private failure: unknown = null;

  constructor(
    private readonly database: Connection,
    private readonly runId: number,
    /** Called once if a commit fails (disk full, read-only file, the run's lock lost): the run must stop. */
    private readonly onFatal: (err: unknown) => void,
    /** The run's lock, checked in every commit; null writes without the check. */
    lock: Pick<RunLock, 'whileHeld'> | null = null,
    private readonly maxBatch: number = RESULT_WRITER_DEFAULTS.maxBatch,
  ) {
    const write = prepareOutcomeWrite(database, runId);
    const writeAll = (ops: readonly OutcomeOp[]) => {
      for (const op of ops) write(op);
    };
    const transaction = database.sqlite.transaction(writeAll);
    this.commit = lock ? (ops) => lock.whileHeld(() => writeAll(ops)) : (ops) => transaction.immediate(ops);
    database.sqlite.pragma(`wal_autocheckpoint = ${RESULT_WRITER_DEFAULTS.walAutocheckpointPages}`);
    this.checkpointer = startWalCheckpointer(database.file);
  }

  /** A 200: normalized rows, raw body, api_calls row and the task done, atomically. */
  success(task: WriterTask, request: IngestRequest, requestKey: string, result: Extract<ApiResult<unknown>, { kind: 'ok' }>, attempts: number): Promise<void> {
    const at = new Date().toISOString();
    const call = callRow(this.runId, task.id, result.call, at, null, result.credits);
    return this.enqueue({ kind: 'success', taskId: task.id, operation: task.operation, requestKey, request, body: result.raw, call, attempts, at });
  }

  /** A paid 200 of the wrong shape: its body (kept apart from answers), api_calls row and the task failed, atomically. */
  rejected(task: WriterTask, request: IngestRequest, requestKey: string, err: ApiSchemaError, attempts: number): Promise<void> {
    const at = new Date().toISOString();
    const call = callRow(this.runId, task.id, err.call, at, err.code, err.credits);
    return this.enqueue({
      kind: 'rejected',
      taskId: task.id,
      operation: task.operation,
      requestKey,
      request,
      body: err.raw,
      call,
      code: err.code,
      message: err.message,
      attempts,
      at,
    });
  }

  /** A 404: the lookup found nothing, which is an answer, not a failure. */
  notFound(task: WriterTask, call: ApiCallInfo, attempts: number, note: string | null): Promise<void> {
    const at = new Date().toISOString();
    return this.enqueue({ kind: 'not_found', taskId: task.id, call: callRow(this.runId, task.id, call, at, null, null), attempts, note, at });
  }

  /** Later pages of an input whose list ended earlier: settled without a call. */
  pastLastPage(task: WriterTask, lastPage: number): Promise<void> {
    return this.enqueue({ kind: 'past_last_page', taskId: task.id, lastPage, at: new Date().toISOString() });
  }

  /** One failed HTTP attempt, for the api_calls log. */
  attemptFailed(task: WriterTask, err: ApiError): Promise<void> {
    const credits = err instanceof ApiSchemaError ? err.credits : null;
    return this.enqueue({ kind: 'attempt_failed', call: callRow(this.runId, task.id, err.call, new Date().toISOString(), err.code, credits) });
  }

  /** The task failed for good in this run; `retryable` failures are picked up again by the next run. */
  failed(task: WriterTask, code: string, message: string, retryable: boolean, attempts: number): Promise<void> {
    return this.enqueue({ kind: 'failed', taskId: task.id, code, message, retryable, attempts, at: new Date().toISOString() });
  }

  /** Commits what is gathered now; resolves once everything enqueued so far is committed (or the writer failed). */
  drain(): Promise<void> {
    this.flush();
    return Promise.resolve();
  }

  /** Commits what is left and stops the checkpointer thread. */
  async close(): Promise<void> {
    this.flush();
    await this.checkpointer.close();
    if (this.database.sqlite.open) this.database.sqlite.pragma(`wal_autocheckpoint = ${RESULT_WRITER_DEFAULTS.walAutocheckpointPagesAfter}`);
  }

  /** The error that stopped the writer, if any. */
  get error(): unknown {
    return this.failure;
  }

  private enqueue(op: OutcomeOp): Promise<void> {
    if (this.failure) return Promise.resolve();
    this.batch.push(op);
    this.batchCommitted ??= new Promise((resolve) => (this.release = resolve));
    const committed = this.batchCommitted;
    if (this.batch.length >= this.maxBatch) this.flush();
    else this.scheduled ??= setImmediate(() => this.flush());
    return committed;
  }

  /** Commits the batch gathered so far in one transaction and lets its waiters go. */
  private flush(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = null;
    const ops = this.batch;
    const release = this.release;
    this.batch = [];
    this.release = null;
    this.batchCommitted = null;
    if (ops.length === 0 || this.failure) return release?.();
    try {
      this.commit(ops);
    } catch (err) {
      // The batch is rolled back whole; nothing more is written, and the run is told once.
      this.failure = err;
      this.onFatal(err);
    }
    release?.();
  }
}

export function callRow(
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
