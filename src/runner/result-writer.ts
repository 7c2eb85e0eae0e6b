import type { Worker } from 'node:worker_threads';
import type { ApiCallInfo, ApiResult } from '../api/types.ts';
import { ApiSchemaError, type ApiError } from '../api/errors.ts';
import type { ApiCallRow } from '../store/api-calls.ts';
import type { Operation } from '../spec/types.ts';
import type { IngestRequest } from '../store/ingest-request.ts';
import type { RunLockHolding } from '../store/run-lock.ts';
import { startWorker } from '../threads/start-worker.ts';
import { startWalCheckpointer, type WalCheckpointer } from '../store/wal-checkpointer.ts';
import type { OutcomeOp } from './outcome-ops.ts';
import { deserializeError, type WriterMessageIn, type WriterMessageOut, type WriterThreadData } from './result-writer-protocol.ts';

/** What the writer needs of a task. */
export interface WriterTask {
  id: number;
  operation: Operation;
}

const THREAD = new URL('./result-writer-thread.ts', import.meta.url);

/**
 * Files the outcome of every call through the run's writer thread (result-writer-thread.ts). Each response's
 * normalized rows, raw body, task status and api_calls row go into the same transaction. One batch is in the
 * thread at a time: outcomes that arrive while it commits are gathered here and sent as the next batch when
 * it acknowledges (group commit, and one message per commit: a message that wakes a thread costs ~30 us,
 * more than cloning its content). An outcome's promise resolves once it is committed: the runner holds the
 * task's slot until then, so a crash at any instant loses at most `concurrency` answers, each one a call that
 * the next run repeats. The WAL checkpointer thread (store/wal-checkpointer.ts) runs beside it.
 */
export class ResultWriter {
  /** Resolves when the thread has opened the dataset; rejects with the reason it could not. */
  readonly ready: Promise<void>;
  private readonly worker: Worker;
  private readonly checkpointer: WalCheckpointer;
  private batch: OutcomeOp[] = [];
  /** Settles when the batch being gathered is committed. */
  private batchCommitted: Promise<void> | null = null;
  private scheduled = false;
  private sentSeq = 0;
  private committedSeq = 0;
  /** Waiters by batch seq, in order. */
  private waiters: Array<{ seq: number; resolve: () => void }> = [];
  private failure: Error | null = null;
  private closing = false;
  private readonly exited: Promise<void>;

  constructor(
    dbFile: string,
    private readonly runId: number,
    /** Called once if the thread cannot write (disk full, read-only file, the run's lock lost): the run must stop. */
    private readonly onFatal: (err: unknown) => void,
    /** The run's lock, checked in every commit; null writes without the check. */
    lock: RunLockHolding | null = null,
  ) {
    const data: WriterThreadData = { dbFile, runId, lock };
    this.worker = startWorker(THREAD, data);
    this.checkpointer = startWalCheckpointer(dbFile);
    let readyResolve!: () => void;
    let readyReject!: (err: unknown) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      readyResolve = resolve;
      readyReject = reject;
    });
    // Awaited only before the first call; a failure before then is reported by that await, not as unhandled.
    this.ready.catch(() => undefined);
    this.worker.on('message', (message: WriterMessageOut) => {
      if (message.type === 'ready') readyResolve();
      else if (message.type === 'committed') this.committed(message.seq);
      else {
        const err = deserializeError(message.error);
        readyReject(err);
        this.fail(err);
      }
    });
    this.worker.on('error', (err) => {
      readyReject(err);
      this.fail(err);
    });
    this.exited = new Promise<void>((resolve) => {
      this.worker.once('exit', () => {
        if (!this.closing) {
          const err = new Error('the database writer thread stopped unexpectedly');
          readyReject(err);
          this.fail(err);
        }
        resolve();
      });
    });
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

  /** Sends what is gathered now and resolves when everything sent so far is committed (or the writer failed). */
  drain(): Promise<void> {
    this.send(true);
    if (this.failure || this.committedSeq >= this.sentSeq) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ seq: this.sentSeq, resolve }));
  }

  /** Commits what is left, closes the thread's connection and waits for the thread to end. */
  async close(): Promise<void> {
    if (!this.failure) await this.drain();
    this.closing = true;
    if (this.failure) await this.worker.terminate();
    else this.worker.postMessage({ type: 'close' } satisfies WriterMessageIn);
    await Promise.all([this.exited, this.checkpointer.close()]);
  }

  /** The error that stopped the writer, if any. */
  get error(): unknown {
    return this.failure;
  }

  private enqueue(op: OutcomeOp): Promise<void> {
    if (this.failure) return Promise.resolve();
    this.batch.push(op);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.send());
    }
    this.batchCommitted ??= new Promise((resolve) => this.waiters.push({ seq: this.sentSeq + 1, resolve }));
    return this.batchCommitted;
  }

  private send(evenIfBusy = false): void {
    this.scheduled = false;
    // A batch sent and not yet acknowledged is in the thread: the next one waits for it (see the class comment).
    const busy = this.sentSeq > this.committedSeq;
    if (this.batch.length === 0 || this.failure || (busy && !evenIfBusy)) return;
    this.sentSeq += 1;
    this.worker.postMessage({ type: 'write', seq: this.sentSeq, ops: this.batch } satisfies WriterMessageIn);
    this.batch = [];
    this.batchCommitted = null;
  }

  private committed(seq: number): void {
    this.committedSeq = seq;
    this.send();
    let i = 0;
    while (i < this.waiters.length && this.waiters[i]!.seq <= seq) this.waiters[i++]!.resolve();
    if (i > 0) this.waiters.splice(0, i);
  }

  /** Nothing more is written; everyone waiting is let go so the run can wind down and report the error. */
  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.batch = [];
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
    this.onFatal(err);
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
