/**
 * The plan ledger of a PostgreSQL dataset, read-only (the analyst role can plan) in one snapshot. Tasks are judged by
 * the run's own rules (PG_DUE, pgRequestChanged, pgSharedAnswer) in one statement, so plan and run cannot drift apart.
 */
import { UsageError } from '../../errors.ts';
import { apiCallReads } from '../api-calls.ts';
import { deferredSinceReads, otherJobsWithOperationReads } from '../ledger.ts';
import type { PlanLedger, PlannedTaskState } from '../plan-ledger.ts';
import { emptyPlanLedger } from '../plan-ledger.ts';
import { readPg } from '../read-steps.ts';
import { openPgForReading } from '../readers/open-for-reading.ts';
import { redactDatabaseUrl } from './database-url.ts';
import { usingPgStore, type PgStore } from './open.ts';
import { PG_DUE, pgRequestChanged, pgSharedAnswer } from './pg-ledger.ts';
import { withPgReadSnapshot, type PgSnapshot } from './read-snapshot.ts';

/**
 * $1 job, $2 operation, $3 freshSince, $4 refresh, $5 other jobs (PG_DUE's and pgSharedAnswer's numbering);
 * $6, $7, $8 the planned tasks' input keys, pages and request texts. One row per planned task, in their order.
 */
const TASK_STATES = `SELECT CASE
    WHEN t.id IS NULL OR ${pgRequestChanged('t', 'p.request_json')} OR ${PG_DUE}
      THEN CASE WHEN EXISTS (SELECT 1 FROM tasks u WHERE ${pgSharedAnswer({ inputKey: 'p.input_key', page: 'p.page', operation: '$2', requestJson: 'p.request_json' })})
        THEN 'fresh' ELSE 'calls' END
    WHEN t.status = 'failed' THEN 'failedBefore'
    ELSE 'fresh' END AS state
  FROM (SELECT a.input_key, a.page, a.request_json::jsonb AS request_json, a.n
    FROM unnest($6::text[], $7::int[], $8::text[]) WITH ORDINALITY AS a(input_key, page, request_json, n)) p
  LEFT JOIN tasks t ON t.job = $1 AND t.input_key = p.input_key AND t.page = p.page
  ORDER BY p.n`;

/** Runs `fn` with the plan ledger of the database at `url`; one with no netingest schema plans as if nothing had run. */
export async function withPgPlanLedger<T>(url: string, fn: (ledger: PlanLedger) => Promise<T>): Promise<T> {
  let store: PgStore;
  try {
    store = await openPgForReading(url);
  } catch (err) {
    // openPgStore's read-only refusal of an empty database: nothing to read, and plan creates nothing.
    if (!(err instanceof UsageError && err.code === 'DB_NOT_FOUND')) throw err;
    return fn(emptyPlanLedger(`no netingest dataset in ${redactDatabaseUrl(url)} yet: planned as if nothing had run (a run creates it)`));
  }
  return usingPgStore(store, ({ pool }) => withPgReadSnapshot(pool, (snapshot) => fn(pgPlanLedger(snapshot))));
}

function pgPlanLedger(snapshot: PgSnapshot): PlanLedger {
  return {
    nothingRan: null,
    otherJobs: (operation, job) => readPg(snapshot, otherJobsWithOperationReads(operation, job)),
    async taskStates(rule, tasks) {
      if (tasks.length === 0) return [];
      const { rows } = await snapshot.client.query<{ state: PlannedTaskState }>(TASK_STATES, [
        rule.job, rule.operation, rule.freshSince, rule.refresh, rule.others,
        tasks.map((t) => t.inputKey), tasks.map((t) => t.page), tasks.map((t) => t.requestJson),
      ]);
      return rows.map((r) => r.state);
    },
    learnedCost: (operation) => readPg(snapshot, apiCallReads.learnedCost(operation)),
    lastKnownBalance: async () => (await readPg(snapshot, apiCallReads.lastCounters()))?.balance ?? null,
    deferredSince: (job) => readPg(snapshot, deferredSinceReads(job)),
    now: async () => new Date((await snapshot.client.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]!.now).toISOString(),
  };
}
