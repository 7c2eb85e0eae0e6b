/**
 * When each page was last answered, per the ledger: link tables are cumulative (an answer raises `last_seen_at` on
 * the rows it lists; one listing nothing writes none), so only the ledger tells `enrich` which rows are a page's latest
 * answer. Rows carry their answer's receipt (`completed_at` = `api_calls.at` = `received_at`), so times compare exactly.
 */
import type { Job } from '../../jobs/schema.ts';
import { specOf } from '../../operations/index.ts';
import { rows, type Reads } from '../read-steps.ts';
import type { TaskRow } from '../ledger.ts';
import { sql, param, paramList } from '../../statement.ts';

/**
 * Per page (index = page - 1, pages 1..`job.pages`): no row of the page last seen before this time belongs
 * to its latest answer (ISO-8601 UTC); null when the ledger knows of no answer to the page.
 */
export type AnswerFloors = Array<string | null>;

/** A page's task as the floors read it: the ledger's row, and when it was settled. */
type PageTask = Pick<TaskRow, 'id' | 'page' | 'status' | 'requestJson'> & { completedAt: string | null };

/** The latest answer to a page: when, and whether it ended the list (a 404, or settled past the last page). */
interface Answer {
  at: string;
  endsList: boolean;
}

/** The floors of an input over the tasks of `jobs`: the job and those asking the same question (same stored rows). */
export function answerFloorsOf(job: Job, jobs: readonly string[]): (inputKey: string) => Reads<AnswerFloors> {
  // One index probe per job name: tasks are unique on (job, input_key, page).
  const tasksSql = sql`SELECT id, page, status, request_json AS "requestJson", completed_at AS "completedAt" FROM tasks
     WHERE job IN (${paramList(jobs.length)}) AND input_key = ${param} AND operation = ${param} AND page <= ${param}`;
  // Whether a stored request asks what the job asks (same filters and page size...): its operation's rule.
  const sameQuestion = specOf(job.operation).enrich.sameQuestion(job);
  return function* (inputKey) {
    const latest: Array<Answer | null> = Array.from({ length: job.pages }, () => null);
    for (const task of yield* rows<PageTask>(tasksSql, [...jobs, inputKey, job.operation, job.pages])) {
      if (!sameQuestion(task.requestJson, inputKey, task.page)) continue;
      const answer = yield* answerOf(task);
      const known = latest[task.page - 1];
      if (answer === null || (known && known.at >= answer.at)) continue;
      latest[task.page - 1] = answer;
    }
    // A page whose latest answer ended the list also ends the pages after it, as of that answer: the runner
    // settles them past the last page, but a later failed call can erase that record from their own task.
    const floors: AnswerFloors = [];
    let endedAt: string | null = null;
    for (const answer of latest) {
      floors.push(later(answer?.at ?? null, endedAt));
      if (answer?.endsList) endedAt = later(endedAt, answer.at);
    }
    return floors;
  };
}

function* answerOf(task: PageTask): Reads<Answer | null> {
  // Set when the task was last answered (done) or settled as nothing (not_found), and kept while a later
  // run has it pending or deferred: that answer is still its latest.
  if (task.completedAt !== null) return { at: task.completedAt, endsList: task.status === 'not_found' };
  // A failed call clears completed_at; the answers before it are still in api_calls (by task_id).
  const call = (yield* rows<{ at: string; status: number }>(
    sql`SELECT at, status FROM api_calls WHERE task_id = ${param} AND status IN (200, 404) AND error_code IS NULL ORDER BY at DESC LIMIT 1`,
    [task.id],
  ))[0];
  return call === undefined ? null : { at: call.at, endsList: call.status === 404 };
}

const later = (a: string | null, b: string | null) => (a === null || (b !== null && b > a) ? b : a);

/**
 * The result columns and lookup of `job`'s operation, as Reads for either engine; `jobs` as for answerFloorsOf.
 * `find` gives the input's result rows by key (canonical URL or search key), each in `columns` order ([] if none).
 */
export function resultLookup(job: Job, jobs: readonly string[]) {
  const { enrich } = specOf(job.operation);
  return { columns: enrich.columns, find: enrich.lookup(answerFloorsOf(job, jobs), job) };
}
