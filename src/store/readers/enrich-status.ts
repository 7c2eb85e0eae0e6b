/** Why an `enrich` input has no result, read from the ledger (all its pages) against what the job would ask now. */
import { isDeepStrictEqual } from 'node:util';
import type { Operation } from '../../spec/types.ts';
import { rows, type Reads } from '../read-steps.ts';
import type { TaskRow } from '../ledger.ts';
import { specOf } from '../../operations/index.ts';
import { sql, param } from '../../statement.ts';

/** Values of the `netingest_status` column. */
export const ENRICH_STATUSES = ['ok', 'not_found', 'failed', 'invalid_input', 'deferred', 'pending'] as const;
export type EnrichStatus = (typeof ENRICH_STATUSES)[number];

/** A status without results, and the reason shown in `netingest_error` (null when there is nothing to say). */
export interface MissingResult {
  status: Exclude<EnrichStatus, 'ok' | 'invalid_input'>;
  error: string | null;
}

/**
 * The request of each page (index = page - 1) as the job plans it now, JSON-encoded as the ledger stores it
 * (`tasks.request_json`); null when it cannot be told (the stored requests are then taken as current).
 */
export type CurrentRequests = readonly string[] | null;

export const REQUEST_CHANGED = "the job's request changed since it ran (the stored results answer the old one); the next run asks again";

/** A page's task as its status is told: the ledger's row, and its last error. */
type TaskState = Pick<TaskRow, 'page' | 'status' | 'requestJson'> & { lastErrorCode: string | null; lastError: string | null };

/**
 * With no results, only pages the job plans now count, and a stored request it would not send now is pending (as the
 * next run makes it). Precedence: `failed`, `deferred`, `pending` (or unplanned), else `not_found` (404, past the last
 * page, empty); where an answer always carries a result (doneMeansResult), a done input without one is `failed`.
 */
export function taskStatusReader(job: string, operation: Operation) {
  const doneMeansResult = specOf(operation).enrich.doneMeansResult;
  const read = (inputKey: string) =>
    rows<TaskState>(
      sql`SELECT page, status, request_json AS "requestJson", last_error_code AS "lastErrorCode", last_error AS "lastError"
       FROM tasks WHERE job = ${param} AND input_key = ${param} ORDER BY page`,
      [job, inputKey],
    );
  return {
    *missing(inputKey: string, current: CurrentRequests): Reads<MissingResult> {
      const stored = yield* read(inputKey);
      if (stored.length === 0) return { status: 'pending', error: 'not run yet (no task for this input)' };
      const pages = current?.length ?? stored.length;
      const planned = current === null ? stored : stored.filter((t) => t.page <= current.length);
      const isCurrent = (t: TaskState) => current === null || sameJson(t.requestJson, current[t.page - 1]);
      const tasks = planned.filter(isCurrent);
      const failed = tasks.find((t) => t.status === 'failed');
      if (failed) return { status: 'failed', error: describe(failed, pages) };
      if (tasks.some((t) => t.status === 'deferred')) return { status: 'deferred', error: 'not reached before the run stopped' };
      if (tasks.length < planned.length) return { status: 'pending', error: REQUEST_CHANGED };
      if (tasks.some((t) => t.status === 'pending')) return { status: 'pending', error: 'not run yet' };
      if (tasks.length < pages) {
        const missingPages = Array.from({ length: pages }, (_, i) => i + 1).filter((p) => !tasks.some((t) => t.page === p));
        return { status: 'pending', error: `not run yet (page ${missingPages.join(', ')} never planned: the job's "pages" grew since it ran)` };
      }
      if (doneMeansResult && tasks.some((t) => t.status === 'done')) {
        return {
          status: 'failed',
          error: 'answered, but the dataset holds no post for it (the answer had no post id, or the post was deleted since); `netingest run --refresh` asks again',
        };
      }
      const note = tasks.find((t) => t.status === 'not_found' && t.lastError)?.lastError ?? null;
      return { status: 'not_found', error: note };
    },
    /** Errors of failed pages of an input that has results (a partial answer), or null. */
    *partialError(inputKey: string): Reads<string | null> {
      const tasks = yield* read(inputKey);
      const failed = tasks.filter((t) => t.status === 'failed');
      return failed.length === 0 ? null : failed.map((t) => describe(t, tasks.length)).join('; ');
    },
  };
}

/** Whether a stored request is the planned one: same text, or same JSON (jsonb gives keys back in its own order). */
function sameJson(stored: string, planned: string | undefined): boolean {
  if (planned === undefined) return false;
  if (stored === planned) return true;
  try {
    return isDeepStrictEqual(JSON.parse(stored), JSON.parse(planned));
  } catch {
    return false;
  }
}

function describe(task: TaskState, pages: number): string {
  const what = [task.lastErrorCode, task.lastError].filter((v) => v).join(': ') || 'failed';
  return pages > 1 ? `page ${task.page}: ${what}` : what;
}
