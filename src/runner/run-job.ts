import PQueue from 'p-queue';
import type { Job } from '../jobs/schema.ts';
import type { TaskRow } from '../store/ledger.ts';
import type { DueTasks } from '../store/run-store.ts';
import { findSpec, readStored } from '../operations/index.ts';
import { executeTask, type ExecutableTask, type ExecutorContext } from './task-executor.ts';
import type { JobProgress } from './progress.ts';

export const RUN_JOB_DEFAULTS = {
  /** Tasks read from the ledger per query. */
  ledgerBatch: 500,
  /** Units waiting in the queue per unit of concurrency: the queue never holds more than this. */
  queueDepthPerWorker: 4,
} as const;

/**
 * Works a job's due tasks: one input's pages in order, so a short page ends the list before later pages are paid for;
 * inputs side by side up to the concurrency, read (or claimed) in batches with backpressure so memory stays flat.
 */
export async function workJob(job: Job, due: DueTasks, jobCtx: ExecutorContext, progress: JobProgress): Promise<void> {
  // Each call asks first whether this worker still holds the task's input (claims on PostgreSQL).
  const ctx: ExecutorContext = due.holds ? { ...jobCtx, holdsInput: (inputKey) => due.holds!(inputKey) } : jobCtx;
  const concurrency = job.rate.concurrency;
  const queue = new PQueue({ concurrency });
  const maxQueued = concurrency * RUN_JOB_DEFAULTS.queueDepthPerWorker;
  let failure: unknown = null;

  const runUnit = async (unit: TaskRow[]) => {
    await runPages(unit, ctx, progress);
    // Its pages are settled, or left for the next run: another worker may take what is still due.
    await due.settled([unit[0]!.inputKey]);
  };
  const enqueue = async (unit: TaskRow[]) => {
    if (queue.size >= maxQueued) await queue.onSizeLessThan(maxQueued);
    queue.add(() => runUnit(unit)).catch((err: unknown) => {
      failure ??= err;
      ctx.stop.stop('fatal', err);
    });
  };

  try {
    await enqueueDue(due, ctx, enqueue, maxQueued);
  } catch (err) {
    // Reading or claiming what is due failed (the database gone): the calls in flight are paid, so their answers go
    // to the writer before the job ends and drains it; no unit queued behind them starts. This error is the job's.
    ctx.stop.stop('fatal', err);
    failure = err;
  }
  await queue.onIdle();
  await due.close();
  if (failure) throw failure;
}

/** Reads (or claims) the due tasks and enqueues them by input, until none is left or the run stops. */
async function enqueueDue(due: DueTasks, ctx: ExecutorContext, enqueue: (unit: TaskRow[]) => Promise<void>, maxQueued: number): Promise<void> {
  let unit: TaskRow[] = [];
  while (!ctx.stop.reason) {
    // A claim takes no more than the queue holds: what a worker claims, the others cannot work.
    const rows = await due.next(due.wholeInputs ? maxQueued : RUN_JOB_DEFAULTS.ledgerBatch);
    if (rows.length === 0) break;
    for (const row of rows) {
      if (unit.length > 0 && unit[0]!.inputKey !== row.inputKey) {
        await enqueue(unit);
        unit = [];
        if (ctx.stop.reason) break;
      }
      unit.push(row);
    }
    // Claimed inputs are whole, and the next claim may wait for this one to be settled: work it now.
    if (due.wholeInputs && unit.length > 0 && !ctx.stop.reason) {
      await enqueue(unit);
      unit = [];
    }
  }
  if (unit.length > 0 && !ctx.stop.reason) await enqueue(unit);
}

/** One input's pages in order; a short page settles the later ones without a call. Resolves once all are committed. */
async function runPages(unit: TaskRow[], ctx: ExecutorContext, progress: JobProgress): Promise<void> {
  for (const [i, row] of unit.entries()) {
    if (ctx.stop.reason) break;
    // The later pages go with this page's answer: one ending the list settles them in its own transaction, so neither a
    // stop nor a crash right after it leaves them due for the next run to pay for.
    const laterPages = unit.slice(i + 1).map((later) => later.id);
    const task: ExecutableTask = { ...toExecutable(row), laterPages };
    const outcome = await executeTask(task, ctx);
    if (outcome.kind === 'stopped') break;
    ctx.onTaskEnded?.(task, outcome);
    if (outcome.kind === 'done') progress.done += 1;
    else if (outcome.kind === 'not_found') progress.notFound += 1;
    else progress.failed += 1;
    // A page that failed leaves the later ones due: they may still hold results.
    if (outcome.kind !== 'not_found' && (outcome.kind !== 'done' || !outcome.lastPage)) continue;
    // Settled with it, unless the writer failed (a fatal stop): then nothing was written.
    if (ctx.stop.reason !== 'fatal') progress.notFound += laterPages.length;
    break;
  }
}

/** The call a ledger row stands for: its request read once through its operation's schema, and its answer's key. */
function toExecutable(row: TaskRow): ExecutableTask {
  const spec = findSpec(row.operation);
  if (spec === undefined) throw new Error(`task ${row.id}: unknown operation ${row.operation}`);
  const request = readStored(spec.request, row.requestJson, 'request_json');
  const ingest = spec.subjectOf(row.inputKey, request);
  return { id: row.id, operation: spec.name, spec, inputKey: row.inputKey, page: row.page, request, ingest, requestKey: spec.requestKey(ingest) };
}
