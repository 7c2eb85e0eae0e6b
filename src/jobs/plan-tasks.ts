import { canonicalCompanyUrl, canonicalPostUrl, type CanonicalResult } from '../urls/canonical.ts';
import { networkHost } from '../urls/network-host.ts';
import { readCsv } from '../input/read-csv.ts';
import { assertColumns, readCsvHeader, type CsvHeader } from '../input/csv-header.ts';
import { SEARCH_JOBS_PAGE_SIZE, type SearchJobsQuery, type SimilarCompaniesRequest } from '../spec/types.ts';
import type { Job, SearchJobsJob } from './schema.ts';
import { searchKey } from './request-keys.ts';
import { SeenKeys } from './seen-keys.ts';
import { normalizeParam, type SearchQueryBase } from './search-query.ts';
import { searchColumns } from './search-columns.ts';

/** One call to make: an input (by its key) and a page, with the exact request to send. */
export interface PlannedTask {
  kind: 'task';
  /** Canonical URL (similar-companies, post-details) or search key (search-jobs); the same for every page. */
  inputKey: string;
  /** 1-based page number. */
  page: number;
  request: SimilarCompaniesRequest | { url: string } | SearchJobsQuery;
  /** Line of the input CSV where the row starts. */
  line: number;
}

/** A row that cannot become a task, with what is wrong; recorded, never fatal. */
export interface PlannedInvalid {
  kind: 'invalid';
  line: number;
  /** The column at fault; null when the row as a whole is (malformed CSV, no search parameters). */
  field: string | null;
  value: string | null;
  reason: string;
}

/** A row asking for an input already planned earlier in the same file: no second task. */
export interface PlannedDuplicate {
  kind: 'duplicate';
  line: number;
  inputKey: string;
}

export type PlannedItem = PlannedTask | PlannedInvalid | PlannedDuplicate;

/**
 * Streams a job's input CSV and yields, in input order, one task per input and page, or why a row makes
 * none. Repeated inputs collapse into the first one's tasks. A missing or empty file, or a missing column,
 * throws InputFileError before the first item.
 */
export async function* planTasks(job: Job): AsyncGenerator<PlannedItem, void, undefined> {
  const file = job.input.csv;
  const header = await readCsvHeader(job.input.csvPath, { displayName: file });
  if (job.operation === 'search-jobs') {
    yield* planSearches(job, header);
    return;
  }
  const column = job.input.column;
  assertColumns(file, header, [column]);
  // Read once: a URL on another host is an invalid row, never a call.
  const host = networkHost();
  const canonicalOf = job.operation === 'similar-companies' ? canonicalCompanyUrl : canonicalPostUrl;
  const canonical = (input: string): CanonicalResult => canonicalOf(input, host);
  const seen = new SeenKeys();
  for await (const item of readCsv(job.input.csvPath, { header, displayName: file })) {
    if ('error' in item) {
      yield { kind: 'invalid', line: item.line, field: null, value: null, reason: `malformed CSV row: ${item.error}` };
      continue;
    }
    const cell = (item.record[column] ?? '').trim();
    if (cell === '') {
      yield { kind: 'invalid', line: item.line, field: column, value: '', reason: 'empty' };
      continue;
    }
    if (isMangled(cell)) {
      yield { kind: 'invalid', line: item.line, field: column, value: cell, reason: NOT_UTF8 };
      continue;
    }
    const url = canonical(cell);
    if (!url.ok) {
      yield { kind: 'invalid', line: item.line, field: column, value: cell, reason: url.reason };
      continue;
    }
    if (!seen.add(url.url)) {
      yield { kind: 'duplicate', line: item.line, inputKey: url.url };
      continue;
    }
    if (job.operation === 'post-details') {
      yield { kind: 'task', inputKey: url.url, page: 1, request: { url: url.url }, line: item.line };
      continue;
    }
    for (let page = 1; page <= job.pages; page++) {
      const request: SimilarCompaniesRequest = { url: url.url, account: job.request.account, page, num: job.request.num };
      yield { kind: 'task', inputKey: url.url, page, request, line: item.line };
    }
  }
}

const NOT_UTF8 = 'not valid UTF-8 text (a Latin-1 or Windows-1252 export?): save the file as UTF-8';

/**
 * True when the cell held bytes that are not UTF-8: they decode to U+FFFD, and the value sent on would be a paid
 * lookup of another URL or search than the one in the file. Only the cells a task is made of are checked, so a
 * mangled name in another column of a lead list costs nothing and keeps its row.
 */
function isMangled(cell: string): boolean {
  return cell.includes('\uFFFD');
}

/** search-jobs: each row is one query; its parameter columns override the job's `request` defaults. */
async function* planSearches(job: SearchJobsJob, header: CsvHeader): AsyncGenerator<PlannedItem, void, undefined> {
  const file = job.input.csv;
  const columns = searchColumns(file, header);
  const seen = new SeenKeys();
  rows: for await (const item of readCsv(job.input.csvPath, { header, displayName: file })) {
    if ('error' in item) {
      yield { kind: 'invalid', line: item.line, field: null, value: null, reason: `malformed CSV row: ${item.error}` };
      continue;
    }
    const query: SearchQueryBase = { ...job.request };
    for (const [param, column] of columns) {
      const cell = item.record[column] ?? '';
      if (isMangled(cell)) {
        yield { kind: 'invalid', line: item.line, field: column, value: cell.trim(), reason: NOT_UTF8 };
        continue rows;
      }
      const r = normalizeParam(param, cell);
      if (!r.ok) {
        yield { kind: 'invalid', line: item.line, field: column, value: cell.trim(), reason: r.reason };
        continue rows;
      }
      if (r.value !== undefined) (query as Record<string, string | string[]>)[param] = r.value;
    }
    if (Object.keys(query).length === 0) {
      yield {
        kind: 'invalid',
        line: item.line,
        field: null,
        value: null,
        reason: 'no search parameters: every parameter cell is empty and the job sets no defaults in "request"',
      };
      continue;
    }
    const inputKey = searchKey(query);
    if (!seen.add(inputKey)) {
      yield { kind: 'duplicate', line: item.line, inputKey };
      continue;
    }
    for (let page = 1; page <= job.pages; page++) {
      const request: SearchJobsQuery = { ...query, start: (page - 1) * SEARCH_JOBS_PAGE_SIZE };
      yield { kind: 'task', inputKey, page, request, line: item.line };
    }
  }
}
