import type BetterSqlite3 from 'better-sqlite3';

/**
 * Names of the other jobs with tasks of `operation` in the ledger (not `own`). A skip-scan over the job index
 * finds each name with one probe, then one EXISTS per name checks its operation: cheap however many tasks.
 */
export function otherJobsWithOperation(sqlite: BetterSqlite3.Database, operation: string, own: string): string[] {
  const names = sqlite
    .prepare(
      `WITH RECURSIVE names(job) AS (
         SELECT (SELECT min(job) FROM tasks)
         UNION ALL
         SELECT (SELECT min(job) FROM tasks WHERE job > names.job) FROM names WHERE names.job IS NOT NULL
       )
       SELECT job FROM names WHERE job IS NOT NULL`,
    )
    .pluck()
    .all() as string[];
  const has = sqlite.prepare('SELECT EXISTS (SELECT 1 FROM tasks WHERE job = ? AND operation = ?)').pluck();
  return names.filter((name) => name !== own && has.get(name, operation) === 1);
}
