/**
 * enrich shows each page's latest answer (issue #5), case by case. The sandbox cannot be told to answer one
 * page differently from the next, so the answers of each "run" are written here through the runner's own
 * writer path (createOutcomeApplier: normalized rows, raw body, api_calls row and task status in one
 * transaction, as the writer thread does), with tasks planned by the runner's planner, at chosen times.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { createLedger } from '../../src/store/ledger.ts';
import { requestKeyOf } from '../../src/operations/index.ts';
import { planIntoLedger } from '../../src/runner/plan-into-ledger.ts';
import type { OutcomeOp } from '../../src/store/outcome-ops.ts';
import { createOutcomeApplier, ingestRequestFor, readOperationAnswer, reprocess } from '../support/store-helpers.ts';
import { JOB_SQL } from '../../src/operations/search-jobs.ts';
import { SIMILAR_SQL } from '../../src/operations/similar-companies.ts';
import { canonicalJobUrl } from '../../src/urls/canonical.ts';
import { searchKey } from '../../src/jobs/request-keys.ts';
import type { Job } from '../../src/jobs/schema.ts';
import { DEFAULT_NETWORK_HOST, type Operation } from '../../src/spec/types.ts';
import { company, job as jobRecord, jobsResponse, similarResponse } from '../support/db-fixtures.ts';
import { csv, makeWorkspace, type Workspace } from '../support/run-helpers.ts';
import { enrichedRows } from './export-helpers.ts';

let ws: Workspace;
let database: Database;
beforeEach(async () => {
  ws = await makeWorkspace();
  database = openDatabase(ws.db);
});
afterEach(async () => {
  database.close();
  await ws.cleanup();
});

const co = (slug: string) => `https://www.network.com/company/${slug}`;
const acme = (...ns: number[]) => ns.map((n) => co(`acme-${n}`));
/** When run `run` answered `page`: runs a day apart, pages a second apart. */
const at = (run: number, page: number) => `2026-11-0${run}T08:00:0${page}.000Z`;

/** An answer as the writer files it: result numbers (db-fixtures records), a 404, past the last page, or a failure. */
type Outcome = number[] | 404 | 'past' | 'failed';

const taskOf = (job: Job, inputKey: string, page: number) => database.sqlite
  .prepare('SELECT id, request_json AS requestJson FROM tasks WHERE job = ? AND input_key = ? AND page = ?')
  .get(job.name, inputKey, page) as { id: number; requestJson: string };

/**
 * Files one task's outcome through the runner's writer path; `nextPast`: the next page is past the last, settled with
 * this answer, as the writer settles it with the answer that ends the list.
 */
function answer(job: Job, inputKey: string, page: number, run: number, outcome: Exclude<Outcome, 'past'>, nextPast = false): void {
  const task = taskOf(job, inputKey, page);
  const pastLast = nextPast ? { taskIds: [taskOf(job, inputKey, page + 1).id], lastPage: page } : undefined;
  const operation: Operation = job.operation;
  const time = at(run, page);
  const call = (status: number, errorCode: string | null) => ({
    runId: run, taskId: task.id, operation, method: 'POST', path: `/${operation}`, status, errorCode,
    latencyMs: 1, totalCredits: null, creditsUsed: null, creditsRemaining: null, at: time,
  });
  let ops: OutcomeOp[];
  if (outcome === 404) ops = [{ kind: 'not_found', taskId: task.id, call: call(404, null), attempts: 1, note: 'nothing found', at: time, pastLast }];
  else if (outcome === 'failed') {
    ops = [
      { kind: 'attempt_failed', call: call(500, 'HTTP_500') },
      { kind: 'failed', taskId: task.id, code: 'HTTP_500', message: 'server error (500)', retryable: true, attempts: 1, at: time },
    ];
  } else {
    const request = ingestRequestFor(operation, inputKey, JSON.parse(task.requestJson));
    const response = operation === 'search-jobs' ? jobsResponse(outcome.map((n) => jobRecord(n))) : similarResponse(outcome.map((n) => company(n)), page, 3);
    const body = JSON.stringify(response);
    const { answer, setAside } = readOperationAnswer(operation, response);
    ops = [{ kind: 'success', taskId: task.id, operation, requestKey: requestKeyOf(request), request, body, answer, setAside, call: call(200, null), attempts: 1, at: time, pastLast }];
  }
  createOutcomeApplier(database, run)(ops);
}

/** Writes the job, plans its tasks into the ledger as a run does, and returns it. */
async function planned(name: string, definition: Record<string, unknown>): Promise<{ file: string; job: Job }> {
  const file = await ws.job(name, { ...definition, name });
  const [job] = await ws.load(file);
  await planIntoLedger(job!, createLedger(database), 1);
  return { file, job: job! };
}

/** Output rows per input key: [status, result URLs, error]. */
async function enriched(file: string, column = 'similar_url'): Promise<Record<string, [unknown, unknown[], unknown]>> {
  const out: Record<string, [unknown, unknown[], unknown]> = {};
  for (const row of await enrichedRows({ db: ws.db, job: file, cwd: ws.dir })) {
    const key = row['netingest_input_key'] as string;
    out[key] ??= [row['netingest_status'], [], row['netingest_error']];
    if (row[column] !== null) out[key][1].push(row[column]);
  }
  return out;
}

const SIMILAR = {
  operation: 'similar-companies',
  input: { csv: 'leads.csv', column: 'company_url' },
  request: { account: { location: ['germany'] }, num: 3 },
  pages: 2,
};
const CASES = ['moved', 'gone', 'empty-tail', 'short', 'not-reasked', 'failed-refresh', 'gone-then-failed'];

/** Run 1 answers every case; runs 2 and 3 answer differently, one case per way an answer can change. */
async function similarCases(): Promise<{ file: string; job: Job }> {
  await ws.write('leads.csv', csv(['company_url'], CASES.map((c) => [co(c)])));
  const { file, job } = await planned('lookalikes', SIMILAR);
  const runs: Record<string, Array<[Outcome, Outcome]>> = {
    moved: [[[1, 2, 3], [4, 5]], [[4, 1, 6], [2]]], // 4 moves up to page 1, 2 down to page 2; 3 and 5 are gone
    gone: [[[1, 2, 3], [4]], [404, 'past']],
    'empty-tail': [[[1, 2, 3], [4, 5]], [[1, 2, 3], []]],
    short: [[[1, 2, 3], [4]], [[1, 2], 'past']],
    'not-reasked': [[[1, 2, 3], [4, 5]], [[6, 7, 8], []]],
    'failed-refresh': [[[1, 2, 3], [4, 5]], [[6, 7, 8], 'failed']],
    'gone-then-failed': [[[1, 2, 3], [4]], [404, 'past'], ['failed', 'failed']],
  };
  for (const [slug, answers] of Object.entries(runs)) {
    answers.forEach(([page1, page2], i) => {
      answer(job, co(slug), 1, i + 1, page1 as Exclude<Outcome, 'past'>, page2 === 'past');
      // Page 2 of 'not-reasked' is left alone in run 2, as when the run stops before it.
      if (page2 !== 'past' && !(slug === 'not-reasked' && i === 1)) answer(job, co(slug), 2, i + 1, page2);
    });
  }
  return { file, job };
}

describe('enrich shows the latest answer of each page', () => {
  it('similar-companies: moved, gone (404), emptied, shortened, not re-asked, failed refreshes', async () => {
    const { file } = await similarCases();
    expect(await enriched(file)).toEqual({
      [co('moved')]: ['ok', acme(4, 1, 6, 2), null],
      [co('gone')]: ['not_found', [], 'nothing found'],
      [co('empty-tail')]: ['ok', acme(1, 2, 3), null],
      [co('short')]: ['ok', acme(1, 2), null],
      [co('not-reasked')]: ['ok', acme(6, 7, 8, 4, 5), null],
      [co('failed-refresh')]: ['ok', acme(6, 7, 8, 4, 5), 'page 2: HTTP_500: server error (500)'],
      [co('gone-then-failed')]: ['failed', [], 'page 1: HTTP_500: server error (500)'],
    });
    const moved = (await enrichedRows({ db: ws.db, job: file, cwd: ws.dir })).filter((r) => r['netingest_input_key'] === co('moved'));
    expect(moved.map((r) => [r['similar_rank'], r['similar_page'], r['similar_last_seen_at']])).toEqual([
      [1, 1, at(2, 1)], [2, 1, at(2, 1)], [3, 1, at(2, 1)], [4, 2, at(2, 2)],
    ]);
  });

  it('similar-companies: pages beyond the job\'s "pages" are not shown once it is lowered', async () => {
    await similarCases();
    const { file } = await planned('lookalikes', { ...SIMILAR, pages: 1 });
    const rows = await enriched(file);
    expect(rows[co('moved')]).toEqual(['ok', acme(4, 1, 6), null]);
    expect(rows[co('not-reasked')]).toEqual(['ok', acme(6, 7, 8), null]);
  });

  it('similar-companies: a later answer to the same question by another job counts, one to other filters does not', async () => {
    const { file } = await similarCases();
    await ws.write('one.csv', csv(['company_url'], [[co('moved')], [co('not-reasked')]]));
    const same = await planned('same-question', { ...SIMILAR, input: { csv: 'one.csv', column: 'company_url' } });
    const other = await planned('other-filters', { ...SIMILAR, input: { csv: 'one.csv', column: 'company_url' }, request: { num: 3 } });
    answer(same.job, co('moved'), 1, 4, 404, true);
    answer(other.job, co('not-reasked'), 1, 4, 404);
    const rows = await enriched(file);
    expect(rows[co('moved')]).toEqual(['not_found', [], null]);
    expect(rows[co('not-reasked')]).toEqual(['ok', acme(6, 7, 8, 4, 5), null]);
  });

  it('similar-companies: reprocess (bodies replayed at their received_at) gives the same enrich', async () => {
    const { file } = await similarCases();
    const before = await enrichedRows({ db: ws.db, job: file, cwd: ws.dir });
    const report = await reprocess(database);
    expect(report).toMatchObject({ invalid: 0 });
    expect(report.replayed).toBeGreaterThan(10);
    expect(await enrichedRows({ db: ws.db, job: file, cwd: ws.dir })).toEqual(before);
  });

  it('search-jobs: a job that moved up and a page answered empty since', async () => {
    await ws.write('searches.csv', csv(['keywords', 'location'], [['rust developer', 'berlin']]));
    const { file, job } = await planned('searches', { operation: 'search-jobs', input: { csv: 'searches.csv' }, pages: 2 });
    const key = searchKey({ keywords: 'rust developer', location: 'berlin' });
    const ten = Array.from({ length: 10 }, (_, i) => i + 1);
    answer(job, key, 1, 1, ten);
    answer(job, key, 2, 1, [11, 12]);
    answer(job, key, 1, 2, [11, ...ten.slice(0, 9)]); // 11 moves to the top, 10 drops out
    answer(job, key, 2, 2, []);
    const url = (n: number) => {
      const r = canonicalJobUrl(jobRecord(n).url, DEFAULT_NETWORK_HOST);
      return r.ok ? r.url : '';
    };
    expect(await enriched(file, 'job_url')).toEqual({ [key]: ['ok', [11, ...ten.slice(0, 9)].map(url), null] });
  });
});

describe('enrich lookups', () => {
  it('read one input through the primary keys, never a scan of a table', () => {
    for (const sql of [SIMILAR_SQL, JOB_SQL]) {
      const plan = (database.sqlite.prepare(`EXPLAIN QUERY PLAN ${sql.sqlite}`).all({ input: 'x', filterKey: 'f', pages: 2, floors: '[]' }) as Array<{ detail: string }>)
        .map((r) => r.detail);
      expect(plan.filter((d) => /^SCAN /.test(d)), plan.join('\n')).toEqual([]);
      expect(plan.filter((d) => /^SEARCH (similar_companies|s|job_search_results|r) USING INDEX sqlite_autoindex_/.test(d)), plan.join('\n')).toHaveLength(2);
    }
  });
});
