/**
 * Credits that the account's counters show used between runs and that no run counted: paid answers lost in
 * flight when a run was killed (charged by the service, never stored), or the token used elsewhere. Each run's
 * spend is counted from the answers it stored, so these are in no run's figure; `status` names them apart.
 */
import { apiCallReads } from './api-calls.ts';
import type { Database } from './open.ts';
import { roundCredits } from '../credits/credit-meter.ts';
import { readSync, rows, value, type Reads } from './read-steps.ts';
import { sql, param } from '../statement.ts';

/** Below this, a gap is float noise of fractional costs. */
const NOISE = 1e-6;

/**
 * For each run after the first that stored paid answers: the step from the highest credits_used stored before it
 * to the lowest it stored, less that call's own cost (as learned before the run). A step across a reset of
 * credits_used (it went down: a plan renewal) tells nothing and counts 0, as does one whose cost is unknown.
 */
export function uncountedCredits(database: Database): number {
  return readSync(database.sqlite, uncountedCreditsReads());
}

/** uncountedCredits() as Reads (read-steps.ts): the same on PostgreSQL. */
export function* uncountedCreditsReads(): Reads<number> {
  const runs = yield* rows<{ runId: number; firstId: number; minUsed: number; maxUsed: number }>(
    `SELECT run_id AS "runId", min(id) AS "firstId", min(credits_used) AS "minUsed", max(credits_used) AS "maxUsed"
      FROM api_calls WHERE status = 200 AND credits_used IS NOT NULL AND run_id IS NOT NULL GROUP BY run_id ORDER BY "firstId"`,
  );
  let total = 0;
  let before: number | null = null;
  for (const run of runs) {
    if (before !== null && run.minUsed >= before) {
      const operation = (yield* value<string>(
        sql`SELECT operation FROM api_calls WHERE run_id = ${param} AND status = 200 AND credits_used = ${param} ORDER BY id LIMIT 1`,
        [run.runId, run.minUsed],
      ))!;
      const cost = (yield* apiCallReads.learnedCost(operation, run.firstId)) ?? (yield* apiCallReads.learnedCost(operation));
      const gap = cost === null ? 0 : run.minUsed - before - cost;
      if (gap > NOISE) total += gap;
    }
    before = before === null || run.minUsed >= before ? Math.max(before ?? run.maxUsed, run.maxUsed) : run.maxUsed;
  }
  return roundCredits(total);
}
