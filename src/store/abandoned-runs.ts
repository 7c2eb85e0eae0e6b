/**
 * Runs whose process died (SIGKILL, a crash, a second SIGINT) before writing their end. Every paid answer was committed
 * with its `api_calls` row and task, so their figures are recomputed from those, as a run's end computes its own.
 */
import { CreditMeter, roundCredits } from '../credits/credit-meter.ts';
import type { Operation } from '../spec/types.ts';
import { apiCallReads } from './api-calls.ts';
import { LEDGER_SQL, statusCounts } from './ledger.ts';
import type { Database } from './open.ts';
import { readSync, rows, value, type Reads } from './read-steps.ts';
import type { TaskStatus } from './tables.ts';
import { createRunLog, type RecentRun, type RunEnd } from './runs.ts';
import { fragment, sql, param } from '../statement.ts';

/** The `error` of a run closed as abandoned. */
export const ABANDONED_RUN_ERROR = 'the process ended without finishing the run';

/** Paid answers replayed per statement. */
const REPLAY_PAGE = 10_000;
/** The paid answers with counters among the calls whose ids are between two parameters. */
const PAID_BETWEEN = fragment(['id >= ', param, ' AND id <= ', param, ' AND credits_used IS NOT NULL AND total_credits IS NOT NULL']);

/** A `runs` row still marked running. */
export type UnfinishedRun = Pick<RecentRun, 'id' | 'jobs' | 'startedAt'> & { pid: number | null; host: string | null };

/** What the database holds for a run that did not write its end. */
export type UnfinishedRunFigures = Omit<RunEnd, 'status' | 'exitCode' | 'error' | 'jobRates'>;

/** The end written for a run closed as abandoned, on both engines. */
export const abandonedRunEnd = (figures: UnfinishedRunFigures): RunEnd => ({ ...figures, status: 'abandoned', exitCode: null, error: ABANDONED_RUN_ERROR, jobRates: null });

/** The runs still marked running, oldest first. */
export function* unfinishedRunsReads(): Reads<UnfinishedRun[]> {
  return yield* rows<UnfinishedRun>(`SELECT id, jobs, started_at AS "startedAt", pid, host FROM runs WHERE status = 'running' ORDER BY id`);
}

/**
 * A run's figures from what it committed: calls, tasks by status, invalid rows, and credits replayed from its paid
 * answers' counters (seeded with what earlier runs had seen). It ends at its last call, or its start if it made none.
 */
export function* measureUnfinishedRunReads(run: UnfinishedRun): Reads<UnfinishedRunFigures> {
  const { calls, firstId, lastAt } = yield* apiCallReads.ofRun(run.id);
  const balance = yield* replayRunCredits(run.id, firstId);
  const tasks = { tasksTotal: 0, tasksDone: 0, tasksNotFound: 0, tasksFailed: 0, tasksDeferred: 0 };
  for (const job of jobNames(run.jobs)) {
    // The ledger's countsByStatus, read here so that it runs on either engine.
    const c = statusCounts(yield* rows<{ status: TaskStatus; n: number }>(LEDGER_SQL.countsByStatus, [job, run.id]));
    tasks.tasksTotal += c.pending + c.done + c.not_found + c.failed + c.deferred;
    tasks.tasksDone += c.done;
    tasks.tasksNotFound += c.not_found;
    tasks.tasksFailed += c.failed;
    // As in a run's summary: what is still pending is left for the next run, like what was deferred.
    tasks.tasksDeferred += c.pending + c.deferred;
  }
  const invalidRows = (yield* value<number>(sql`SELECT count(*) FROM invalid_inputs WHERE run_id = ${param}`, [run.id])) ?? 0;
  return {
    endedAt: lastAt ?? run.startedAt,
    creditsAtStart: balance.balance === null ? null : balance.balance + balance.spent,
    creditsAtEnd: balance.balance,
    creditsSpent: balance.balance === null ? null : roundCredits(balance.spent),
    ...tasks,
    invalidRows,
    calls,
  };
}

/**
 * The counters are the account's (on PostgreSQL other runs' workers may be charged between two answers), so every paid
 * answer from the run's first call to its last is replayed, each step counted for its own run: runs add up to the bill.
 */
function* replayRunCredits(runId: number, firstId: number | null): Reads<{ balance: number | null; spent: number }> {
  if (firstId === null) return { balance: null, spent: 0 };
  const lastId = (yield* value<number>(sql`SELECT max(id) FROM api_calls WHERE run_id = ${param}`, [runId])) ?? firstId;
  const operations = yield* rows<{ operation: Operation }>(sql`SELECT DISTINCT operation FROM api_calls WHERE ${PAID_BETWEEN}`, [firstId, lastId]);
  const knownCosts: Partial<Record<Operation, number>> = {};
  for (const { operation } of operations) knownCosts[operation] = (yield* apiCallReads.learnedCost(operation, firstId)) ?? undefined;
  const lastCreditsUsed = (yield* apiCallReads.lastCounters(firstId))?.creditsUsed ?? null;
  const meter = new CreditMeter({ costs: knownCosts, lastCreditsUsed });
  let own = 0;
  let ownBalance: number | null = null;
  // In pages: a crashed run of millions of calls is replayed (by status, by the next run's start) in flat memory.
  for (let after = firstId - 1, page = REPLAY_PAGE; page === REPLAY_PAGE; ) {
    const paid = yield* rows<{ id: number | string; runId: number | string; operation: Operation; total_credits: number; credits_used: number; credits_remaining: number }>(
      sql`SELECT id, run_id AS "runId", operation, total_credits, credits_used, credits_remaining FROM api_calls
        WHERE ${PAID_BETWEEN} AND id > ${param} ORDER BY id LIMIT ${param}`,
      [firstId, lastId, after, REPLAY_PAGE],
    );
    for (const row of paid) {
      const before = meter.spent;
      meter.observe(row.operation, row);
      if (Number(row.runId) !== runId) continue;
      own += meter.spent - before;
      ownBalance = meter.balance;
    }
    page = paid.length;
    after = Number(paid.at(-1)?.id ?? lastId);
  }
  return { balance: ownBalance, spent: own };
}

/**
 * Closes every run still marked running as `abandoned`, figures measured from the database; returns their ids. Only
 * in the transaction that took the run lock: runs write their row only while holding it, so any still running is dead.
 */
export function closeAbandonedRuns(database: Database): number[] {
  const runs = createRunLog(database);
  const closed: number[] = [];
  for (const run of readSync(database.sqlite, unfinishedRunsReads())) {
    runs.end(run.id, abandonedRunEnd(readSync(database.sqlite, measureUnfinishedRunReads(run))));
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
