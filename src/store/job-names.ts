import { rows, value, type Reads } from './read-steps.ts';
import { sql, param } from '../statement.ts';

/** Every job name in the ledger, by a skip-scan of the job index: one probe per name, however many tasks. */
export const JOB_NAMES_SQL = `WITH RECURSIVE names(job) AS (
    SELECT (SELECT min(job) FROM tasks)
    UNION ALL SELECT (SELECT min(job) FROM tasks WHERE job > names.job) FROM names WHERE names.job IS NOT NULL
  ) SELECT job FROM names WHERE job IS NOT NULL`;

/** Other jobs than `own` with tasks of `operation`: JOB_NAMES_SQL, then one EXISTS per name checks its operation. */
export function* otherJobsWithOperationReads(operation: string, own: string): Reads<string[]> {
  const names = yield* rows<{ job: string }>(JOB_NAMES_SQL);
  const others: string[] = [];
  for (const { job } of names) {
    if (job === own) continue;
    const has = yield* value<number>(sql`SELECT EXISTS (SELECT 1 FROM tasks WHERE job = ${param} AND operation = ${param})`, [job, operation]);
    if (has === 1) others.push(job);
  }
  return others;
}
