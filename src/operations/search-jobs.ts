/**
 * search-jobs: one search per input row (parameter columns over the job's defaults), pages of 10 asked by GET with
 * `start`; rows: the query's job_searches row, jobs, their positions in job_search_results. Jobs are named by `url`.
 */
import { z } from 'zod';
import { searchKey } from '../jobs/request-keys.ts';
import { isListParam, normalizeParam, searchColumns, SEARCH_QUERY_PARAMS, type SearchQueryBase } from '../jobs/search-query.ts';
import { OPERATION_PATHS, SEARCH_JOBS_PAGE_SIZE, SEARCH_JOBS_PARAMS, type SearchJobsQuery } from '../spec/types.ts';
import { canonicalCompanyUrl, canonicalJobUrl } from '../urls/canonical.ts';
import { bool, int, list, obj, str, strict, CREDIT_MEMBERS, type ReadObject } from './answer-contract.ts';
import { isMangled, NOT_UTF8 } from './input-cells.ts';
import { common, text, type JobCommon, type JobInputFile } from '../jobs/job-common.ts';
import type { OperationSpec } from './operation-spec.ts';
import type { RowWrite } from './stored-rows.ts';
import { joinedList, objectOf, sqlValue, recordsByUrl, urlKey } from './stored-values.ts';
import { rawRows, timeInJsonArray, sql, param, named, literal, codePointOrder } from '../statement.ts';

const job = obj({
  title: str(),
  company_name: str(),
  company_link: str(),
  location: str(),
  url: strict(str()),
  posted_timestamp: int(),
  posted_date: str(),
  is_actively_hiring: bool(),
  company_logo_url: str(),
  description_html: str(),
  description: str(),
  criteria: obj({ 'Employment type': str(), Industries: str(), 'Job function': str(), 'Seniority level': str() }),
});

const body = {
  success: bool(),
  message: str(),
  currentPage: int(),
  numResults: int(),
  results: list(job),
  ...CREDIT_MEMBERS,
};

export type SearchJobsAnswer = ReadObject<typeof body>;
export type JobAnswer = ReadObject<(typeof job)['members']>;

/** `/v1/api/search-jobs?...`: parameters in spec order, percent-encoded (space: %20), list items each, joined by a plain comma; empties left out. */
export function searchJobsPath(query: SearchJobsQuery): string {
  let qs = '';
  for (const name of SEARCH_JOBS_PARAMS) {
    const value: unknown = query[name];
    if (value === undefined || value === null) continue;
    let encoded: string;
    if (isListParam(name)) {
      if (!Array.isArray(value)) throw new TypeError(`search-jobs parameter ${name} must be an array of strings`);
      encoded = value
        .filter((item) => item !== '' && item !== undefined && item !== null)
        .map((item) => encodeURIComponent(String(item)))
        .join(',');
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new TypeError(`search-jobs parameter ${name} must be a finite number`);
      encoded = String(value);
    } else {
      encoded = encodeURIComponent(String(value));
    }
    if (encoded === '') continue;
    qs += `${qs === '' ? '?' : '&'}${name}=${encoded}`;
  }
  return OPERATION_PATHS['search-jobs'] + qs;
}

/** The page a request's `start` asks for, 1 for start 0: what a result is stored under, whatever the page's length. */
export const pageOfStart = (start: number): number => Math.floor(start / SEARCH_JOBS_PAGE_SIZE) + 1;

/** What an answer is filed under: the query by its stable key (one job_searches row each) and the `start` sent. */
const subjectSchema = z.looseObject({
  operation: z.literal('search-jobs'),
  searchKey: z.string(),
  query: z.custom<Omit<SearchJobsQuery, 'start'>>((v) => typeof v === 'object' && v !== null),
  start: z.number(),
});
export type SearchJobsSubject = z.output<typeof subjectSchema>;

/** The result columns `enrich` appends (docs/export.md: public names). */
export const JOB_COLUMNS = [
  'job_rank',
  'job_url',
  'job_title',
  'job_company_name',
  'job_company_link',
  'job_location',
  'job_posted_date',
  'job_is_actively_hiring',
  'job_employment_type',
  'job_seniority_level',
  'job_function',
  'job_industries',
  'job_description',
  'job_last_seen_at',
] as const;

// As for similar companies, only the rows of each page's latest answer, by the page stored with each row: a page may
// hold more or fewer than 10 results, so a position (start + index) does not tell its page. Ranked 1, 2, 3... in
// page order, then position. A row without a page (an older release's run, open across the upgrade, wrote it) is
// read as the migration filled the rows before it: position / 10 + 1.
export const JOB_SQL = sql`
  WITH results(job_url, position, last_seen_at, page) AS (
    SELECT job_url, position, last_seen_at, coalesce(page, position / ${literal(SEARCH_JOBS_PAGE_SIZE)} + 1)
    FROM job_search_results WHERE search_key = ${named('input')}
  ), latest(page, at) AS (
    SELECT page, max(last_seen_at) FROM results WHERE page <= ${named('pages')} GROUP BY page
  )
  SELECT
    j.url, j.title, j.company_name, j.company_link, j.location, j.posted_date, j.is_actively_hiring,
    j.employment_type, j.seniority_level, j.job_function, j.industries, j.description, r.last_seen_at
  FROM latest l
  JOIN results r ON r.page = l.page AND r.last_seen_at = l.at
  JOIN jobs j ON j.url = r.job_url
  WHERE l.at >= ${timeInJsonArray(named('floors'), '(l.page - 1)')}
  ORDER BY r.page, r.position, ${codePointOrder('r.job_url')}`;
const RESULT_URLS_SQL = sql`SELECT job_url FROM job_search_results WHERE search_key = ${param} ORDER BY job_url`;

/** A list parameter: an array, or one string with items separated by commas or semicolons. */
const listParam = z.union([z.array(z.union([z.string(), z.number()])), z.string()], {
  error: 'must be a list of strings, or one string with items separated by "," or ";"',
});

/** Its job definition: the common settings, the input CSV and the query's defaults (job files; docs/jobs.md). */
export const searchJobsJobDefinition = z.strictObject({
  ...common,
  operation: z.literal('search-jobs'),
  input: z.strictObject({
    csv: text,
    column: z
      .never({ error: 'not used by search-jobs: every CSV column named like a query parameter is used' })
      .optional(),
  }),
  request: z
    .strictObject({
      keywords: z.string().optional(),
      location: z.string().optional(),
      timePosted: z.string().optional(),
      experienceLevels: listParam.optional(),
      jobTypes: listParam.optional(),
      workplaceTypes: listParam.optional(),
      companyIds: listParam.optional(),
      start: z.never({ error: 'not allowed here: set "pages" (pages of 10 results are fetched via start)' }).optional(),
    })
    .optional(),
});

export interface SearchJobsJob extends JobCommon {
  operation: 'search-jobs';
  input: JobInputFile;
  /** Defaults for parameters a row leaves out or empty; lists already split and trimmed. */
  request: SearchQueryBase;
}

export const searchJobs = {
  name: 'search-jobs',
  starter: {
    name: 'job-search',
    definition: {
      operation: 'search-jobs',
      input: { csv: 'data/job-queries.csv' },
      request: { timePosted: 'past_week', location: 'germany' },
      credits: { reserve: 100 },
    },
    csv: 'keywords,location\nrobotics engineer,germany\ndata analyst,france\n',
  },
  refreshAfterDays: 0.5,
  resolveJob(def, base, file, issues) {
    // The search defaults are normalized exactly as CSV cells are (trimmed, lists split, known values checked).
    const request: SearchQueryBase = {};
    for (const param of SEARCH_QUERY_PARAMS) {
      const raw = def.request?.[param];
      if (raw === undefined) continue;
      const r = normalizeParam(param, raw);
      if (!r.ok) issues.push({ field: `request.${param}`, message: r.reason });
      else if (r.value !== undefined) (request as Record<string, string | string[]>)[param] = r.value;
    }
    return { ...base, operation: 'search-jobs', input: file, request };
  },
  /** Each row is one query: its parameter columns override the job's `request` defaults. */
  rowReader(job, header) {
    const columns = searchColumns(job.input.csv, header);
    return (record) => {
      const query: SearchQueryBase = { ...job.request };
      for (const [param, column] of columns) {
        const cell = record[column] ?? '';
        if (isMangled(cell)) return { ok: false, field: column, value: cell.trim(), reason: NOT_UTF8 };
        // A parameter is one line: a cell over several is a stray quote's, holding the searches of the rows after it.
        if (/[\r\n]/.test(cell.trim())) return { ok: false, field: column, value: cell.trim(), reason: 'holds a line break' };
        const r = normalizeParam(param, cell);
        if (!r.ok) return { ok: false, field: column, value: cell.trim(), reason: r.reason };
        if (r.value !== undefined) (query as Record<string, string | string[]>)[param] = r.value;
      }
      if (Object.keys(query).length === 0) {
        return { ok: false, field: null, value: null, reason: 'no search parameters: every parameter cell is empty and the job sets no defaults in "request"' };
      }
      const requests = Array.from({ length: job.pages }, (_, i): SearchJobsQuery => ({ ...query, start: i * SEARCH_JOBS_PAGE_SIZE }));
      return { ok: true, inputKey: searchKey(query), requests };
    };
  },
  // The key is the hash of the query: the query cannot be rebuilt from it.
  requestsOfKey: () => null,

  request: z.looseObject({
    start: z.number().optional(),
    timePosted: z.string().optional(),
    keywords: z.string().optional(),
    experienceLevels: z.array(z.string()).optional(),
    companyIds: z.array(z.string()).optional(),
    jobTypes: z.array(z.string()).optional(),
    workplaceTypes: z.array(z.string()).optional(),
    location: z.string().optional(),
  }),
  send: (query) => ({ path: searchJobsPath(query), body: null, json: false }),

  answer: { body, recordsAt: ['results'], identity: 'url', recordMembers: [] },
  // A page ends the list when both its records and its stated count (`numResults`) are under a page: a page with
  // unreadable records whose count says it was full does not end the paging.
  lastPage: (_asked, answer) => Math.max(answer.results?.length ?? 0, answer.numResults ?? 0) < SEARCH_JOBS_PAGE_SIZE,
  notFound: {
    // The spec's body is the gateway's shape: nothing stricter can be asked.
    isAnswer: (_body, message) => message !== null,
    shape: 'a JSON object with a message',
    ambiguous: true,
  },

  subjectOf(inputKey, request) {
    const { start, ...query } = request;
    return { operation: 'search-jobs', searchKey: inputKey, query, start: start ?? 0 };
  },
  subject: subjectSchema,
  requestKey: (s) => `${s.searchKey} start=${s.start}`,
  rows(s, res, ctx) {
    const q = s.query ?? {};
    const writes: RowWrite[] = [
      {
        table: 'job_searches',
        row: {
          search_key: s.searchKey,
          keywords: sqlValue(q.keywords),
          location: sqlValue(q.location),
          time_posted: sqlValue(q.timePosted),
          experience_levels: joinedList(q.experienceLevels),
          job_types: joinedList(q.jobTypes),
          workplace_types: joinedList(q.workplaceTypes),
          company_ids: joinedList(q.companyIds),
          first_seen_at: ctx.seenAt,
          last_seen_at: ctx.seenAt,
        },
      },
    ];
    const { records, skipped } = recordsByUrl(res.results, canonicalJobUrl, ctx.networkHost);
    for (const [url, [index, record]] of records) {
      const job = record as JobAnswer;
      const criteria = objectOf(job.criteria);
      writes.push({
        table: 'jobs',
        row: {
          url,
          title: sqlValue(job.title),
          company_name: sqlValue(job.company_name),
          // Canonical so that jobs.company_link joins companies.url; an odd link is kept as given (up to MAX_URL_LENGTH).
          company_link: urlKey(job.company_link, canonicalCompanyUrl, ctx.networkHost),
          location: sqlValue(job.location),
          posted_timestamp: sqlValue(job.posted_timestamp),
          posted_date: sqlValue(job.posted_date),
          is_actively_hiring: sqlValue(job.is_actively_hiring),
          company_logo_url: sqlValue(job.company_logo_url),
          description_html: sqlValue(job.description_html),
          description: sqlValue(job.description),
          employment_type: sqlValue(criteria['Employment type']),
          industries: sqlValue(criteria['Industries']),
          job_function: sqlValue(criteria['Job function']),
          seniority_level: sqlValue(criteria['Seniority level']),
          first_seen_at: ctx.seenAt,
          updated_at: ctx.seenAt,
        },
      });
      const row = { search_key: s.searchKey, job_url: url, position: s.start + index, first_seen_at: ctx.seenAt, last_seen_at: ctx.seenAt, page: pageOfStart(s.start) };
      writes.push({ table: 'job_search_results', row });
    }
    return { writes, skipped, anomalies: [] };
  },
  listPage: (s) => ({ table: 'job_search_results', row: { search_key: s.searchKey, page: pageOfStart(s.start) } }),

  enrich: {
    columns: JOB_COLUMNS,
    numbered: {
      count: 'job_count',
      fields: ['job_title', 'job_company_name', 'job_location', 'job_posted_date', 'job_employment_type', 'job_url'],
    },
    lookup(floorsOf, job) {
      return function* (inputKey) {
        const floors = JSON.stringify(yield* floorsOf(inputKey));
        const found = yield* rawRows(JOB_SQL, { input: inputKey, pages: job.pages, floors });
        return found.map((row, i) => [i + 1, ...row]);
      };
    },
    // The input key is the hash of the query, and the page fixes `start`.
    sameQuestion: () => () => true,
    doneMeansResult: false,
    changeKeys() {
      return function* (inputKey) {
        const jobs = (yield* rawRows(RESULT_URLS_SQL, [inputKey])).map(([url]) => ({ entity: 'job' as const, key: String(url), changedOnly: true }));
        return [{ entity: 'search', key: inputKey }, ...jobs];
      };
    },
  },
} satisfies OperationSpec<SearchJobsQuery, SearchJobsAnswer, SearchJobsSubject, SearchJobsJob, z.output<typeof searchJobsJobDefinition>>;
