/**
 * What `netingest plan` asks the dataset, in one snapshot, writing nothing: how a run starting now would treat each
 * task, and what it would know. sqlite/dataset-store.ts and pg/dataset-store.ts answer.
 */
import type { DueRule, TaskRow } from './ledger.ts';

export type PlannedTask = Pick<TaskRow, 'inputKey' | 'page' | 'requestJson'>;

/** Where a planned task lands in the report: still fresh, failed earlier and not retried, or a call to make. */
export type PlannedTaskState = 'fresh' | 'failedBefore' | 'calls';

/** The run's due rule for one job, and the other jobs whose fresh answers to the same lookups it takes. */
export interface PlanRule extends DueRule {
  operation: string;
  others: readonly string[];
}

/** The dataset as `plan` reads it, inside one read snapshot. */
export interface PlanLedger {
  /** Why the dataset holds nothing yet, for the user (a PostgreSQL database with no netingest schema); else null. */
  readonly nothingRan: string | null;
  /** The other jobs of the ledger with tasks of `operation`: those whose answers `job` can take. */
  otherJobs(operation: string, job: string): Promise<string[]>;
  /** The state of each task, in the order given: ask with batches (PLAN_LEDGER_DEFAULTS.tasksPerBatch). */
  taskStates(rule: PlanRule, tasks: readonly PlannedTask[]): Promise<PlannedTaskState[]>;
  /** The cost of one call of `operation` learned from earlier calls, or null. */
  learnedCost(operation: string): Promise<number | null>;
  /** The balance the service's last counters gave, or null before any call. */
  lastKnownBalance(): Promise<number | null>;
  /** When the earliest run that left tasks of `job` deferred began (ledger.ts's deferredSinceReads). */
  deferredSince(job: string): Promise<string | null>;
  /** ISO time freshness is judged by: the server's on PostgreSQL, as a run there judges it; absent, this host's. */
  now?(): Promise<string>;
}

export const PLAN_LEDGER_DEFAULTS = {
  /** Planned tasks per taskStates() call: one round trip each on PostgreSQL, however large the input. */
  tasksPerBatch: 1000,
} as const;

/** The ledger of a dataset where nothing has run: every task a call, nothing learned. */
export function emptyPlanLedger(nothingRan: string | null): PlanLedger {
  return {
    nothingRan,
    otherJobs: () => Promise.resolve([]),
    taskStates: (_rule, tasks) => Promise.resolve(tasks.map(() => 'calls' as const)),
    learnedCost: () => Promise.resolve(null),
    lastKnownBalance: () => Promise.resolve(null),
    deferredSince: () => Promise.resolve(null),
  };
}
