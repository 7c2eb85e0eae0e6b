/**
 * Why an input row of `enrich` has no result: read from the task ledger (all pages of the input) when the
 * dataset holds nothing for it.
 */
import type BetterSqlite3 from 'better-sqlite3';

/** Values of the `netingest_status` column. */
export const ENRICH_STATUSES = ['ok', 'not_found', 'failed', 'invalid_input', 'deferred', 'pending'] as const;
export type EnrichStatus = (typeof ENRICH_STATUSES)[number];

/** A status without results, and the reason shown in `netingest_error` (null when there is nothing to say). */
export interface MissingResult {
  status: Exclude<EnrichStatus, 'ok' | 'invalid_input'>;
  error: string | null;
}

interface TaskState {
  page: number;
  status: string;
  lastErrorCode: string | null;
  lastError: string | null;
}

/**
 * Reads the tasks of one input of `job`. With no results: any failed page makes it `failed`, else any deferred
 * page `deferred`, else any pending page (or no task at all: never planned) `pending`, else `not_found`
 * (every page answered with nothing).
 */
export function taskStatusReader(sqlite: BetterSqlite3.Database, job: string) {
  const stmt = sqlite.prepare(
    `SELECT page, status, last_error_code AS lastErrorCode, last_error AS lastError
     FROM tasks WHERE job = ? AND input_key = ? ORDER BY page`,
  );
  const read = (inputKey: string) => stmt.all(job, inputKey) as TaskState[];
  return {
    /** Why the input has no result. */
    missing(inputKey: string): MissingResult {
      const tasks = read(inputKey);
      const failed = tasks.find((t) => t.status === 'failed');
      if (failed) return { status: 'failed', error: describe(failed, tasks.length) };
      if (tasks.some((t) => t.status === 'deferred')) return { status: 'deferred', error: 'not reached before the run stopped' };
      if (tasks.length === 0) return { status: 'pending', error: 'not run yet (no task for this input)' };
      if (tasks.some((t) => t.status === 'pending')) return { status: 'pending', error: 'not run yet' };
      const note = tasks.find((t) => t.status === 'not_found' && t.lastError)?.lastError ?? null;
      return { status: 'not_found', error: note };
    },
    /** Errors of failed pages of an input that has results (a partial answer), or null. */
    partialError(inputKey: string): string | null {
      const tasks = read(inputKey);
      const failed = tasks.filter((t) => t.status === 'failed');
      return failed.length === 0 ? null : failed.map((t) => describe(t, tasks.length)).join('; ');
    },
  };
}

function describe(task: TaskState, pages: number): string {
  const what = [task.lastErrorCode, task.lastError].filter((v) => v).join(': ') || 'failed';
  return pages > 1 ? `page ${task.page}: ${what}` : what;
}
