import { rows, value, type Reads } from './read-steps.ts';
import { sql, param } from '../statement.ts';

/**
 * Names of the other jobs with tasks of `operation` in the ledger (not `own`). A skip-scan over the job index
 * finds each name with one probe, then one EXISTS per name checks its operation: cheap however many tasks.
 */
export function* otherJobsWithOperationReads(operation: string, own: string): Reads<string[]> {
  const names = yield* rows<{ job: string }>(
    `WITH RECURSIVE names(job) AS (
       SELECT (SELECT min(job) FROM tasks)
       UNION ALL
       SELECT (SELECT min(job) FROM tasks WHERE job > names.job) FROM names WHERE names.job IS NOT NULL
     )
     SELECT job FROM names WHERE job IS NOT NULL`,
  );
  const others: string[] = [];
  for (const { job } of names) {
    if (job === own) continue;
    const has = yield* value<number>(sql`SELECT EXISTS (SELECT 1 FROM tasks WHERE job = ${param} AND operation = ${param})`, [job, operation]);
    if (has === 1) others.push(job);
  }
  return others;
}
