import { medianStep, reportedBalance, roundCredits } from '../credits/credit-meter.ts';
import type { Connection } from './connection.ts';
import { rows, type Reads } from './read-steps.ts';
import type { Awaitable } from './run-store.ts';
import { sql, param } from '../statement.ts';

// apiCallReads' statements, the same SQL on both engines.
const RECENT_USED = sql`SELECT credits_used FROM api_calls
  WHERE operation = ${param} AND status = 200 AND credits_used IS NOT NULL AND id < ${param} ORDER BY id DESC LIMIT 200`;
const OF_RUN = sql`SELECT count(*) AS calls, min(id) AS "firstId", max(at) AS "lastAt" FROM api_calls WHERE run_id = ${param}`;
/**
 * The latest counters before a call id: of the last run's answers, the one that had used the most (answers of one run
 * commit out of their order at concurrency above 1, so its last row may hold older counters than the one before).
 */
const LAST_COUNTERS = sql`SELECT total_credits AS "totalCredits", credits_used AS "creditsUsed",
  credits_remaining AS "creditsRemaining", at FROM api_calls WHERE status = 200 AND credits_remaining IS NOT NULL AND id < ${param}
  AND run_id IS NOT DISTINCT FROM (SELECT run_id FROM api_calls WHERE status = 200 AND credits_remaining IS NOT NULL AND id < ${param} ORDER BY id DESC LIMIT 1)
  ORDER BY credits_used DESC, id DESC LIMIT 1`;

export interface ApiCallRow {
  runId: number | null;
  taskId: number | null;
  operation: string;
  method: string;
  path: string;
  status: number | null;
  errorCode: string | null;
  latencyMs: number | null;
  totalCredits: number | null;
  creditsUsed: number | null;
  creditsRemaining: number | null;
  at: string;
}

/** The insert's head on both engines; its rows are callValues()'s. */
export const CALL_HEAD = 'INSERT INTO api_calls (run_id, task_id, operation, method, path, status, error_code, latency_ms, total_credits, credits_used, credits_remaining, at)';

export function callValues(r: ApiCallRow): unknown[] {
  return [r.runId, r.taskId, r.operation, r.method, r.path, r.status, r.errorCode, r.latencyMs, r.totalCredits, r.creditsUsed, r.creditsRemaining, r.at];
}

/** Prepares the insert once; the returned function logs one HTTP call, answered or not (its readers: apiCallReads). */
export function saveApiCall(database: Connection): (r: ApiCallRow) => void {
  // Positional parameters: binding by name looks each one up in an object, on the run's hottest insert.
  const insert = database.sqlite.prepare(`${CALL_HEAD} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  return (r) => void insert.run(...callValues(r));
}

/** What the api_calls log tells, as Reads (read-steps.ts): the same statements on either engine. */
export const apiCallReads = {
  /**
   * A call's cost: the median positive step between sorted credits_used (calls in flight are written out of charge
   * order; one charged but never written doubles a step). With `beforeCallId`, as it was before that call.
   */
  *learnedCost(operation: string, beforeCallId = Number.MAX_SAFE_INTEGER) {
    const used = yield* rows<{ credits_used: number }>(RECENT_USED, [operation, beforeCallId]);
    return medianStep(used.map((r) => r.credits_used));
  },
  /** How many calls a run made, the id of its first and the time of its last (null without calls). */
  *ofRun(runId: number) {
    return (yield* rows<{ calls: number; firstId: number | null; lastAt: string | null }>(OF_RUN, [runId]))[0]!;
  },
  /** The last counters reported (before call `beforeCallId`), undefined before any; `balance` as the guard has it. */
  *lastCounters(beforeCallId = Number.MAX_SAFE_INTEGER) {
    const row = (yield* rows<{ totalCredits: number; creditsUsed: number; creditsRemaining: number; at: string }>(LAST_COUNTERS, [beforeCallId, beforeCallId]))[0];
    if (row === undefined) return undefined;
    // The three counters are stored together, from the same answer.
    const balance = reportedBalance({ total_credits: row.totalCredits, credits_used: row.creditsUsed, credits_remaining: row.creditsRemaining });
    return { ...row, balance: roundCredits(balance) };
  },
};

/** What the api_calls log tells a run (RunStore.calls), each read answered by `read`: at once on SQLite, awaited on PostgreSQL. */
export const callHistory = (read: <T>(reads: Reads<T>) => Awaitable<T>) => ({
  learnedCost: (operation: string) => read(apiCallReads.learnedCost(operation)),
  lastCounters: () => read(apiCallReads.lastCounters()),
  ofRun: (runId: number) => read(apiCallReads.ofRun(runId)),
});

export type CallHistory = ReturnType<typeof callHistory>;
