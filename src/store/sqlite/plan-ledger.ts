/**
 * The plan ledger (plan-ledger.ts) of a SQLite dataset, inside the read snapshot its store opened: the ledger's own
 * dueState and hasSharedAnswer, task by task (each a probe of the unique index, in process: no round trip to save).
 */
import type { Database } from '../open.ts';
import { createLedger, type Ledger } from '../ledger.ts';
import { apiCallReads } from '../api-calls.ts';
import { readSync } from '../read-steps.ts';
import type { PlanLedger, PlannedTask, PlannedTaskState, PlanRule } from '../plan-ledger.ts';

/** The plan ledger of `database`, opened for reading, to be asked inside one snapshot. */
export function sqlitePlanLedger(database: Database): PlanLedger {
  const ledger = createLedger(database);
  return {
    nothingRan: null,
    otherJobs: (operation, job) => Promise.resolve(ledger.otherJobs(operation, job)),
    taskStates: (rule, tasks) => Promise.resolve(tasks.map((task) => stateOf(ledger, rule, task))),
    learnedCost: (operation) => Promise.resolve(readSync(database.sqlite, apiCallReads.learnedCost(operation))),
    lastKnownBalance: () => Promise.resolve(readSync(database.sqlite, apiCallReads.lastCounters())?.balance ?? null),
  };
}

/** How a run starting now takes the task: fresh, failed for good, or due (unless another job answered it). */
function stateOf(ledger: Ledger, rule: PlanRule, task: PlannedTask): PlannedTaskState {
  const state = ledger.dueState(rule, task);
  if (state === 'fresh') return 'fresh';
  if (state === 'failed') return 'failedBefore';
  const lookup = { operation: rule.operation, ...task };
  return ledger.hasSharedAnswer(lookup, rule.others, rule.freshSince) ? 'fresh' : 'calls';
}
