/**
 * The result columns `enrich` appends to each input row, per operation, and the prepared lookups that fetch
 * one input's results (bounded: the pages of one input), so the whole result set is never in memory. The
 * results of an input are those of each page's latest answer (see latest-answers.ts).
 * docs/export.md lists every column; the names are a public contract.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { Job } from '../../jobs/schema.ts';
import { filterKey } from '../../jobs/request-keys.ts';
import { postIdOfUrl } from '../../urls/post-id.ts';
import { SEARCH_JOBS_PAGE_SIZE } from '../../spec/types.ts';
import { answerFloorReader } from './latest-answers.ts';

/** Looks up the result rows of one input, each already in the order of `columns`. */
export interface ResultLookup {
  columns: readonly string[];
  /** Result rows of the input with this key (canonical URL or search key); [] when there are none. */
  find(inputKey: string): unknown[][];
}

export const SIMILAR_COLUMNS = [
  'similar_rank',
  'similar_page',
  'similar_relevancy_score',
  'similar_relevancy_grade',
  'similar_url',
  'similar_name',
  'similar_universal_name',
  'similar_type',
  'similar_website',
  'similar_industries',
  'similar_specialities',
  'similar_staff_total',
  'similar_staff_range',
  'similar_hq_city',
  'similar_hq_country',
  'similar_founded_year',
  'similar_phone',
  'similar_description',
  'similar_last_seen_at',
] as const;

export const POST_COLUMNS = [
  'post_id',
  'post_author_name',
  'post_author_headline',
  'post_author_url',
  'post_timestamp',
  'post_text',
  'post_reactions',
  'post_comments',
  'post_media_count',
  'post_media_urls',
  'post_media_description',
  'post_hashtags',
  'post_last_seen_at',
] as const;

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

// The link table is cumulative (rows of earlier answers stay, with their last_seen_at): only the rows of each
// page's latest answer are read. Per page of the job's plan, the rows seen last are the latest answer that
// listed anything (a company's `page` and `rank` are those of the latest answer that listed it, so one that
// moved counts on its new page only); they are dropped when the ledger knows of a later answer to the page
// (@floors, a JSON array by page: a 404, an empty page, past the last page). Rank is computed here (1-based,
// page by page): the stored rank restarts on every page.
export const SIMILAR_SQL = `
  WITH latest(page, at) AS (
    SELECT page, max(last_seen_at) FROM similar_companies
    WHERE reference_url = @input AND filter_key = @filterKey AND page <= @pages
    GROUP BY page
  )
  SELECT
    s.page, s.relevancy_score, s.relevancy_grade, s.company_url, c.name, c.universal_name, c.type, c.website,
    (SELECT group_concat(value, '; ' ORDER BY position) FROM company_industries WHERE company_url = s.company_url),
    (SELECT group_concat(value, '; ' ORDER BY position) FROM company_specialities WHERE company_url = s.company_url),
    c.staff_total,
    CASE WHEN c.staff_range_start IS NULL AND c.staff_range_end IS NULL THEN NULL
      ELSE coalesce(c.staff_range_start, '') || '-' || coalesce(c.staff_range_end, '') END,
    (SELECT city FROM company_locations WHERE company_url = s.company_url AND is_headquarter = 1 ORDER BY position LIMIT 1),
    (SELECT country FROM company_locations WHERE company_url = s.company_url AND is_headquarter = 1 ORDER BY position LIMIT 1),
    c.founded_year, c.phone, c.description, s.last_seen_at
  FROM latest l
  JOIN similar_companies s
    ON s.reference_url = @input AND s.filter_key = @filterKey AND s.page = l.page AND s.last_seen_at = l.at
  LEFT JOIN companies c ON c.url = s.company_url
  WHERE l.at >= coalesce(json_extract(@floors, '$[' || (l.page - 1) || ']'), '')
  ORDER BY s.page, s.rank, s.company_url`;

// One post, found by an indexed lookup: `posts` is keyed by `post_id` (its primary key); `url` (indexed too)
// holds only the last URL form the post was asked for.
const postSql = (where: string) => `
  SELECT
    p.post_id, p.author_name, p.author_headline, p.author_url, p.posted_raw, p.text_content, p.reactions,
    p.comments_count,
    (SELECT count(*) FROM post_media WHERE post_id = p.post_id),
    (SELECT group_concat(url, '; ' ORDER BY position) FROM post_media WHERE post_id = p.post_id),
    p.media_description, p.hashtags, p.updated_at
  FROM posts p
  WHERE ${where}
  ORDER BY p.updated_at DESC, p.post_id
  LIMIT 1`;
export const POST_BY_ID_SQL = postSql('p.post_id = ?');
export const POST_BY_URL_SQL = postSql('p.url = ?');

// As for similar companies, only the rows of each page's latest answer. A page's rows are told by their
// position: page p asks with start = (p - 1) * SEARCH_JOBS_PAGE_SIZE and stores start + index (the size is
// written into the text: a bound JS number is a REAL, and the division must be an integer one). Stored
// positions are offsets into the search; the output ranks them 1, 2, 3...
export const JOB_SQL = `
  WITH latest(slot, at) AS (
    SELECT position / ${SEARCH_JOBS_PAGE_SIZE}, max(last_seen_at) FROM job_search_results
    WHERE search_key = @input AND position < @pages * ${SEARCH_JOBS_PAGE_SIZE}
    GROUP BY position / ${SEARCH_JOBS_PAGE_SIZE}
  )
  SELECT
    j.url, j.title, j.company_name, j.company_link, j.location, j.posted_date, j.is_actively_hiring,
    j.employment_type, j.seniority_level, j.job_function, j.industries, j.description, r.last_seen_at
  FROM latest l
  JOIN job_search_results r ON r.search_key = @input AND r.position / ${SEARCH_JOBS_PAGE_SIZE} = l.slot AND r.last_seen_at = l.at
  JOIN jobs j ON j.url = r.job_url
  WHERE l.at >= coalesce(json_extract(@floors, '$[' || l.slot || ']'), '')
  ORDER BY r.position, r.job_url`;

/** The result columns and lookup of `job`'s operation. */
export function resultLookup(sqlite: BetterSqlite3.Database, job: Job): ResultLookup {
  switch (job.operation) {
    case 'similar-companies': {
      const stmt = sqlite.prepare(SIMILAR_SQL).raw(true);
      const floors = answerFloorReader(sqlite, job);
      const params = { input: '', filterKey: filterKey(job.request.account), pages: job.pages, floors: '' };
      return {
        columns: SIMILAR_COLUMNS,
        find: (inputKey) => {
          params.input = inputKey;
          params.floors = JSON.stringify(floors(inputKey));
          return (stmt.all(params) as unknown[][]).map(([page, ...rest], i) => [i + 1, page, ...rest]);
        },
      };
    }
    case 'post-details': {
      // By activity id first: every URL form of a post (/posts/…-activity-<id>-…, /feed/update/urn:li:activity:<id>)
      // finds it, whichever form was asked last. By URL when the URL names no activity, or when the stored id is
      // not the one the URL names (the answer's PostId wins in the ingest).
      const byId = sqlite.prepare(POST_BY_ID_SQL).raw(true);
      const byUrl = sqlite.prepare(POST_BY_URL_SQL).raw(true);
      const floors = answerFloorReader(sqlite, job);
      const updatedAt = POST_COLUMNS.indexOf('post_last_seen_at');
      return {
        columns: POST_COLUMNS,
        find: (inputKey) => {
          const postId = postIdOfUrl(inputKey);
          let rows = postId === null ? [] : (byId.all(postId) as unknown[][]);
          if (rows.length === 0) rows = byUrl.all(inputKey) as unknown[][];
          // A 404 for this URL after the post was last stored (deleted since): the latest answer is "nothing".
          const floor = rows.length === 0 ? null : floors(inputKey)[0];
          if (floor != null && (rows[0]![updatedAt] as string) < floor) rows = [];
          return rows.map((row) => {
            row[11] = listText(row[11]);
            return row;
          });
        },
      };
    }
    case 'search-jobs': {
      const stmt = sqlite.prepare(JOB_SQL).raw(true);
      const floors = answerFloorReader(sqlite, job);
      const params = { input: '', pages: job.pages, floors: '' };
      return {
        columns: JOB_COLUMNS,
        find: (inputKey) => {
          params.input = inputKey;
          params.floors = JSON.stringify(floors(inputKey));
          return (stmt.all(params) as unknown[][]).map((row, i) => [i + 1, ...row]);
        },
      };
    }
  }
}

/** A JSON array of strings (hashtags) as `a; b`; anything else as stored. */
function listText(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    const parsed = JSON.parse(value) as unknown;
    if (Array.isArray(parsed)) return parsed.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join('; ');
  } catch {
    // not JSON: keep the text
  }
  return value;
}
