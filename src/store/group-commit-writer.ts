/**
 * What both engines' writers share: outcomes gathered into group commits (an event-loop turn's, or `maxBatch`), each
 * promise resolved once its group commits. An engine says only how a group commits and which errors refuse a value.
 */
import type { ApiCallRow } from './api-calls.ts';
import type { AnySubject } from '../operations/index.ts';
import type { CreditCounters } from '../spec/types.ts';
import type { CallFacts, FailedAttempt, ReadAnswer, UnreadAnswer, WriterTask } from './run-store.ts';
import { settlementsOf, type OutcomeOp, type PastLast } from './outcome-ops.ts';

/** The tasks a writer's committed outcomes settled, by the status each took, and the failed ones by code. */
export interface SettledCounts {
  done: number;
  notFound: number;
  failed: number;
  failedByCode: Record<string, number>;
}

const SETTLED_KEY = { done: 'done', not_found: 'notFound', failed: 'failed' } as const;

export abstract class GroupCommitWriter {
  private batch: OutcomeOp[] = [];
  /** Resolves the waiters of the batch being gathered once it is committed (or the writer failed). */
  private release: (() => void) | null = null;
  private batchCommitted: Promise<void> | null = null;
  private scheduled: NodeJS.Immediate | null = null;
  private failure: unknown = null;
  private callsHanded = 0;
  private callsCommitted = 0;
  private readonly settledCounts: SettledCounts = { done: 0, notFound: 0, failed: 0, failedByCode: {} };
  /** The answers stored in their refused form (refusedAlone), with why: success() tells its caller. */
  private readonly refused = new WeakMap<OutcomeOp, string>();

  constructor(
    protected readonly runId: number,
    /** Called once if a commit fails (disk full, read-only file, the run's lock lost): the run must stop. */
    private readonly onFatal: (err: unknown) => void,
    private readonly maxBatch: number,
    /** The time outcomes are stamped with (ISO): the PostgreSQL server's clock there, this host's on SQLite. */
    private readonly now: () => string = () => new Date().toISOString(),
  ) {}

  /**
   * Commits one group in one transaction (or its parts, refusedAlone), telling committed() of each that commits, then
   * `release`s it (failures go to fail()); groups commit in flush order.
   */
  protected abstract commitGroup(ops: readonly OutcomeOp[], release: () => void): void;

  /**
   * What the database said in refusing a value of the rows written (a constraint, a value past its limits), as the
   * refused answer's message; null for any other failure (the connection, the disk, the lock), which stops the run.
   */
  protected abstract refusal(err: unknown): string | null;

  abstract drain(): Promise<void>;
  abstract close(): Promise<void>;

  /**
   * A 200: normalized rows (from the answer as the client read it), raw body, api_calls row, task done, atomically,
   * with the input's later pages if its page ends the list. Resolves with null once committed, or with why the database
   * refused its rows (then stored as refusedAlone says, the later pages left due).
   */
  success(task: WriterTask, request: AnySubject, requestKey: string, result: ReadAnswer, attempts: number): Promise<string | null> {
    const at = this.now();
    const call = callRow(this.runId, task.id, result.call, at, null, result.credits);
    const op: OutcomeOp = {
      kind: 'success', taskId: task.id, operation: task.operation, requestKey, request, body: result.raw, answer: result.data, setAside: result.setAside, endsList: result.lastPage === true, pastLast: result.lastPage === true ? pastLastOf(task) : undefined, call, attempts, at,
    };
    return this.enqueue(op).then(() => this.refused.get(op) ?? null);
  }

  /** A paid 200 of the wrong shape: its body (kept apart from answers), api_calls row, task failed, atomically. */
  rejected(task: WriterTask, request: AnySubject, requestKey: string, err: UnreadAnswer, attempts: number): Promise<void> {
    const at = this.now();
    const call = callRow(this.runId, task.id, err.call, at, err.code, err.credits);
    return this.enqueue({
      kind: 'rejected', taskId: task.id, operation: task.operation, requestKey, request, body: err.raw, call, code: err.code, message: err.message, attempts, at,
    });
  }

  /**
   * A 404: the lookup found nothing, which is an answer, not a failure; a page's ends its list, with its later pages
   * (and `request`'s list, if a paged one, ends there for the history).
   */
  notFound(task: WriterTask, call: CallFacts, attempts: number, note: string | null, request?: AnySubject): Promise<void> {
    const at = this.now();
    return this.enqueue({ kind: 'not_found', taskId: task.id, call: callRow(this.runId, task.id, call, at, null, null), attempts, note, at, request, pastLast: pastLastOf(task) });
  }

  /** One failed HTTP attempt, for the api_calls log. */
  attemptFailed(task: WriterTask, err: FailedAttempt): Promise<void> {
    return this.enqueue({ kind: 'attempt_failed', call: callRow(this.runId, task.id, err.call, this.now(), err.code, err.credits ?? null) });
  }

  /** The task failed for good in this run; `retryable` failures are picked up again by the next run. */
  failed(task: WriterTask, code: string, message: string, retryable: boolean, attempts: number): Promise<void> {
    return this.enqueue({ kind: 'failed', taskId: task.id, code, message, retryable, attempts, at: this.now() });
  }

  /** The calls handed over so far, committed or not: what the run paid for, when its database can no longer say. */
  get calls(): number {
    return this.callsHanded;
  }

  /** The calls handed over that no commit wrote (the writer failed first): made, and maybe paid, all the same. */
  get callsNotWritten(): number {
    return this.callsHanded - this.callsCommitted;
  }

  /** A copy of what committed outcomes made of their tasks: added to counts read before the job, its books once the database is gone. */
  get settled(): SettledCounts {
    return { ...this.settledCounts, failedByCode: { ...this.settledCounts.failedByCode } };
  }

  get error(): unknown {
    return this.failure;
  }

  /** A group's commit failed: it is rolled back whole, nothing more is written, and the run is told once. */
  protected fail(err: unknown): void {
    this.failure = err;
    this.onFatal(err);
  }

  /**
   * After a refused value: each outcome alone, so one answer's rows cost no other's; one refused alone as a paid answer
   * it cannot store (body kept for reprocess, task failed STORE_REFUSED: not paid again). Null: the writer stops.
   */
  protected refusedAlone(ops: readonly OutcomeOp[], err: unknown): Array<readonly OutcomeOp[]> | null {
    const why = this.refusal(err);
    if (why === null) return null;
    if (ops.length > 1) return ops.map((op) => [op]);
    const op = ops[0];
    if (op?.kind !== 'success') return null;
    const message = `the database refused this answer's rows: ${why}`;
    this.refused.set(op, message);
    // Its page failed: the later pages stay due (they may still hold results).
    const { answer: _answer, setAside: _setAside, pastLast: _pastLast, ...paid } = op;
    return [[{ ...paid, kind: 'rejected', code: 'STORE_REFUSED', message, call: { ...op.call, errorCode: 'STORE_REFUSED' } }]];
  }

  private enqueue(op: OutcomeOp): Promise<void> {
    // Counted before a failed writer drops it: the call was made (and may have been paid) all the same.
    if ('call' in op) this.callsHanded += 1;
    if (this.failure) return Promise.resolve();
    this.batch.push(op);
    this.batchCommitted ??= new Promise((resolve) => (this.release = resolve));
    const committed = this.batchCommitted;
    if (this.batch.length >= this.maxBatch) this.flush();
    else this.scheduled ??= setImmediate(() => this.flush());
    return committed;
  }

  /** Hands the batch gathered so far to commitGroup, which lets its waiters go once it is committed. */
  protected flush(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = null;
    const ops = this.batch;
    const release = this.release ?? (() => undefined);
    this.batch = [];
    this.release = null;
    this.batchCommitted = null;
    if (ops.length === 0 || this.failure) return release();
    this.commitGroup(ops, release);
  }

  /**
   * Counts the tasks `ops` settled, as the ledger's countsByStatus and failedByCode would: each engine calls it as a
   * transaction of them commits, so the parts of a group written again count though a later part stops the writer.
   */
  protected committed(ops: readonly OutcomeOp[]): void {
    const counts = this.settledCounts;
    for (const op of ops) {
      if ('call' in op) this.callsCommitted += 1;
      for (const settled of settlementsOf(op)) {
        counts[SETTLED_KEY[settled.status]] += 1;
        if (settled.status !== 'failed') continue;
        // The ledger's name for a failure without a code (failedByCode).
        const code = settled.code ?? 'UNKNOWN';
        counts.failedByCode[code] = (counts.failedByCode[code] ?? 0) + 1;
      }
    }
  }
}

/** The later due pages a paged task's answer settles if it ends the list; undefined without any. */
function pastLastOf(task: WriterTask): PastLast | undefined {
  if (task.page === undefined || !task.laterPages?.length) return undefined;
  return { taskIds: task.laterPages, lastPage: task.page };
}

function callRow(runId: number, taskId: number, call: Partial<CallFacts>, at: string, errorCode: string | null, credits: CreditCounters | null): ApiCallRow {
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
