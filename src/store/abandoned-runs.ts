/**
 * Runs whose process died (SIGKILL, a crash, a second SIGINT) before writing the end of their `runs` row.
 * Their figures are not lost: every answer they paid for was committed with its `api_calls` row and its
 * task, so the figures are recomputed from those, the way a run that ends computes its own.
 */
import { CreditMeter, roundCredits } from '../credits/credit-meter.ts';
import type { Operation } from '../spec/types.ts';
import { createApiCallLog } from './api-calls.ts';
import { createLedger } from './ledger.ts';
import type { Database } from './open.ts';
import { createRunLog, type RunEnd } from './runs.ts';

/** The `error` of a run closed as abandoned. */
export const ABANDONED_RUN_ERROR = 'the process ended without finishing the run';

/** A `runs` row still marked running. */
export interface UnfinishedRun {
  id: number;
  jobs: string;
  startedAt: string;
  pid: number | null;
  host: string | null;
}

/** What the database holds for a run that did not write its end. */
export type UnfinishedRunFigures = Omit<RunEnd, 'status' | 'exitCode' | 'error'>;

/** The runs still marked running, oldest first. */
export function unfinishedRuns(database: Database): UnfinishedRun[] {
  return database.sqlite
    .prepare(`SELECT id, jobs, started_at AS startedAt, pid, host FROM runs WHERE status = 'running' ORDER BY id`)
    .all() as UnfinishedRun[];
}

/**
 * A run's figures from what it committed: its calls, the tasks it planned by status, its invalid rows, and
 * its credits replayed through the CreditMeter from the counters of its paid answers, in the order they
 * were written, starting from the costs and counters earlier runs had seen (as the run itself started). It ends at its
 * last call, or at its start if it made none. Only reads.
 */
export function measureUnfinishedRun(database: Database, run: UnfinishedRun): UnfinishedRunFigures {
  const { sqlite } = database;
  const callLog = createApiCallLog(database);
  const { calls, firstId, lastAt } = callLog.ofRun(run.id);

  const paidOps = sqlite
    .prepare(`SELECT DISTINCT operation FROM api_calls WHERE run_id = ? AND credits_used IS NOT NULL AND total_credits IS NOT NULL`)
    .pluck()
    .all(run.id) as Operation[];
  const knownCosts: Partial<Record<Operation, number>> = {};
  for (const op of paidOps) knownCosts[op] = callLog.learnedCost(op, firstId ?? undefined) ?? undefined;
  const lastCreditsUsed = firstId === null ? null : (callLog.lastCounters(firstId)?.creditsUsed ?? null);
  const meter = new CreditMeter({ costs: knownCosts, lastCreditsUsed });
  const paid = sqlite.prepare(`SELECT operation, total_credits, credits_used, credits_remaining FROM api_calls
    WHERE run_id = ? AND credits_used IS NOT NULL AND total_credits IS NOT NULL ORDER BY id`);
  for (const row of paid.iterate(run.id) as Iterable<{ operation: Operation; total_credits: number; credits_used: number; credits_remaining: number }>) {
    meter.observe(row.operation, row);
  }
  const balance = meter.balance;

  const ledger = createLedger(database);
  const tasks = { total: 0, done: 0, notFound: 0, failed: 0, deferred: 0 };
  for (const job of jobNames(run.jobs)) {
    const c = ledger.countsByStatus(job, run.id);
    tasks.total += c.pending + c.done + c.not_found + c.failed + c.deferred;
    tasks.done += c.done;
    tasks.notFound += c.not_found;
    tasks.failed += c.failed;
    // As in a run's summary: what is still pending is left for the next run, like what was deferred.
    tasks.deferred += c.pending + c.deferred;
  }
  const invalidRows = sqlite.prepare(`SELECT count(*) FROM invalid_inputs WHERE run_id = ?`).pluck().get(run.id) as number;

  return {
    endedAt: lastAt ?? run.startedAt,
    creditsAtStart: balance === null ? null : balance + meter.spent,
    creditsAtEnd: balance,
    creditsSpent: balance === null ? null : roundCredits(meter.spent),
    tasksTotal: tasks.total,
    tasksDone: tasks.done,
    tasksNotFound: tasks.notFound,
    tasksFailed: tasks.failed,
    tasksDeferred: tasks.deferred,
    invalidRows,
    calls,
  };
}

/**
 * Closes every run still marked running as `abandoned`, with its figures measured from the database. Only
 * for the holder of the run lock, inside the transaction that took it: a run writes its row only while it
 * holds the lock, so once the lock is ours, any run still marked running has lost its process. Returns
 * their ids.
 */
export function closeAbandonedRuns(database: Database): number[] {
  const runs = createRunLog(database);
  const closed: number[] = [];
  for (const run of unfinishedRuns(database)) {
    runs.end(run.id, { ...measureUnfinishedRun(database, run), status: 'abandoned', exitCode: null, error: ABANDONED_RUN_ERROR });
    closed.push(run.id);
  }
  return closed;
}

function jobNames(jobs: string): string[] {
  try {
    const parsed: unknown = JSON.parse(jobs);
    return Array.isArray(parsed) ? parsed.filter((j): j is string => typeof j === 'string') : [];
  } catch {
    // Written by netingest as a JSON array; a hand-edited row only loses its task counts.
    return [];
  }
}
