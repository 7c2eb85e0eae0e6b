/**
 * search-jobs pages -> jobs, the job_searches row of the query and its job_search_results. Prepared once;
 * runs inside the caller's transaction.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { JobAnswer, SearchJobsAnswer } from '../../operations/search-jobs.ts';
import { canonicalCompanyUrl, canonicalJobUrl } from '../../urls/canonical.ts';
import { networkHost } from '../../urls/network-host.ts';
import type { SearchJobsIngestRequest } from '../ingest-request.ts';
import type { NormalizeResult } from './similar-companies.ts';
import { arrayOf, joinedList, objectOf, sqlValue, urlKey } from './values.ts';

const JOB_COLUMNS = [
  'url',
  'title',
  'company_name',
  'company_link',
  'location',
  'posted_timestamp',
  'posted_date',
  'is_actively_hiring',
  'company_logo_url',
  'description_html',
  'description',
  'employment_type',
  'industries',
  'job_function',
  'seniority_level',
] as const;

export const UPSERT_JOB_SQL = `
  INSERT INTO jobs (${JOB_COLUMNS.join(', ')}, first_seen_at, updated_at)
  VALUES (${JOB_COLUMNS.map(() => '?').join(', ')}, ?, ?)
  ON CONFLICT (url) DO UPDATE SET
    ${JOB_COLUMNS.slice(1).map((c) => `${c} = excluded.${c}`).join(',\n    ')},
    first_seen_at = min(first_seen_at, excluded.first_seen_at),
    updated_at = max(updated_at, excluded.updated_at)`;

const SEARCH_COLUMNS = [
  'search_key',
  'keywords',
  'location',
  'time_posted',
  'experience_levels',
  'job_types',
  'workplace_types',
  'company_ids',
] as const;

export const UPSERT_SEARCH_SQL = `
  INSERT INTO job_searches (${SEARCH_COLUMNS.join(', ')}, first_seen_at, last_seen_at)
  VALUES (${SEARCH_COLUMNS.map(() => '?').join(', ')}, ?, ?)
  ON CONFLICT (search_key) DO UPDATE SET
    ${SEARCH_COLUMNS.slice(1).map((c) => `${c} = excluded.${c}`).join(',\n    ')},
    first_seen_at = min(first_seen_at, excluded.first_seen_at),
    last_seen_at = max(last_seen_at, excluded.last_seen_at)`;

export const UPSERT_RESULT_SQL = `
  INSERT INTO job_search_results (search_key, job_url, position, first_seen_at, last_seen_at)
  VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (search_key, job_url) DO UPDATE SET
    position = excluded.position,
    first_seen_at = min(first_seen_at, excluded.first_seen_at),
    last_seen_at = max(last_seen_at, excluded.last_seen_at)`;

/** Prepares the statements and returns the normalizer of one search-jobs response. */
export function prepareSearchJobs(
  sqlite: BetterSqlite3.Database,
): (req: SearchJobsIngestRequest, res: SearchJobsAnswer, seenAt: string) => NormalizeResult {
  const upsertJob = sqlite.prepare(UPSERT_JOB_SQL);
  const upsertSearch = sqlite.prepare(UPSERT_SEARCH_SQL);
  const upsertResult = sqlite.prepare(UPSERT_RESULT_SQL);
  const host = networkHost();

  function writeJob(job: JobAnswer, url: string, seenAt: string): void {
    const criteria = objectOf(job.criteria);
    upsertJob.run(
      url,
      sqlValue(job.title),
      sqlValue(job.company_name),
      // Canonical so that jobs.company_link joins companies.url; an odd link is kept as given.
      urlKey(job.company_link, canonicalCompanyUrl, host) ?? sqlValue(job.company_link),
      sqlValue(job.location),
      sqlValue(job.posted_timestamp),
      sqlValue(job.posted_date),
      sqlValue(job.is_actively_hiring),
      sqlValue(job.company_logo_url),
      sqlValue(job.description_html),
      sqlValue(job.description),
      sqlValue(criteria['Employment type']),
      sqlValue(criteria['Industries']),
      sqlValue(criteria['Job function']),
      sqlValue(criteria['Seniority level']),
      seenAt,
      seenAt,
    );
  }

  return (req, res, seenAt) => {
    const q = req.query ?? {};
    upsertSearch.run(
      req.searchKey,
      sqlValue(q.keywords),
      sqlValue(q.location),
      sqlValue(q.timePosted),
      joinedList(q.experienceLevels),
      joinedList(q.jobTypes),
      joinedList(q.workplaceTypes),
      joinedList(q.companyIds),
      seenAt,
      seenAt,
    );
    let rows = 1;
    let skipped = 0;
    let index = 0;
    for (const record of arrayOf(res.results)) {
      const position = req.start + index++;
      const job = objectOf(record) as JobAnswer;
      const url = urlKey(job.url, canonicalJobUrl, host);
      if (url === null) {
        skipped++;
        continue;
      }
      writeJob(job, url, seenAt);
      upsertResult.run(req.searchKey, url, position, seenAt, seenAt);
      rows += 2;
    }
    return { rows, skipped };
  };
}
