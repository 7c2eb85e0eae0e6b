/**
 * How each normalized table is written: its columns in bind order and its statement. An upsert keeps the
 * earliest first_seen_at and the latest updated_at/last_seen_at, so replay order cannot move them back; the
 * rows of a set (a company's locations, a post's media) are plain inserts after the owner's old set is deleted.
 * The operations say which rows an answer stores (src/operations/<name>.ts); this file is the SQL for them.
 */

const COMPANY_COLUMNS = [
  'url',
  'name',
  'universal_name',
  'type',
  'object_urn',
  'description',
  'phone',
  'followers',
  'website',
  'logo',
  'cover',
  'tagline',
  'founded_year',
  'staff_total',
  'staff_range_start',
  'staff_range_end',
  'funding_data',
] as const;

export const UPSERT_COMPANY_SQL = `
  INSERT INTO companies (${COMPANY_COLUMNS.join(', ')}, first_seen_at, updated_at)
  VALUES (${COMPANY_COLUMNS.map(() => '?').join(', ')}, ?, ?)
  ON CONFLICT (url) DO UPDATE SET
    ${COMPANY_COLUMNS.slice(1).map((c) => `${c} = excluded.${c}`).join(',\n    ')},
    first_seen_at = min(first_seen_at, excluded.first_seen_at),
    updated_at = max(updated_at, excluded.updated_at)`;

const LOCATION_COLUMNS = [
  'company_url', 'position', 'is_headquarter', 'city', 'country', 'country_name', 'geographic_area', 'is_primary', 'line1', 'line2', 'postal_code',
] as const;

export const INSERT_LOCATION_SQL = `
  INSERT INTO company_locations
    (${LOCATION_COLUMNS.join(', ')})
  VALUES (${LOCATION_COLUMNS.map(() => '?').join(', ')})`;

const SIMILAR_COLUMNS = [
  'reference_url', 'filter_key', 'company_url', 'filters', 'rank', 'page', 'relevancy_score', 'relevancy_grade', 'first_seen_at', 'last_seen_at',
] as const;

export const UPSERT_SIMILAR_SQL = `
  INSERT INTO similar_companies
    (${SIMILAR_COLUMNS.join(', ')})
  VALUES (${SIMILAR_COLUMNS.map(() => '?').join(', ')})
  ON CONFLICT (reference_url, filter_key, company_url) DO UPDATE SET
    filters = excluded.filters,
    rank = excluded.rank,
    page = excluded.page,
    relevancy_score = excluded.relevancy_score,
    relevancy_grade = excluded.relevancy_grade,
    first_seen_at = min(first_seen_at, excluded.first_seen_at),
    last_seen_at = max(last_seen_at, excluded.last_seen_at)`;

const POST_COLUMNS = [
  'post_id',
  'url',
  'author_name',
  'author_headline',
  'author_url',
  'author_profile_image',
  'posted_raw',
  'posted_on',
  'text_content',
  'hashtags',
  'media_description',
  'reactions',
  'comments_count',
] as const;

export const UPSERT_POST_SQL = `
  INSERT INTO posts (${POST_COLUMNS.join(', ')}, first_seen_at, updated_at)
  VALUES (${POST_COLUMNS.map(() => '?').join(', ')}, ?, ?)
  ON CONFLICT (post_id) DO UPDATE SET
    ${POST_COLUMNS.slice(1).map((c) => `${c} = excluded.${c}`).join(',\n    ')},
    first_seen_at = min(first_seen_at, excluded.first_seen_at),
    updated_at = max(updated_at, excluded.updated_at)`;

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

const valueTable = (table: string) => ({
  columns: ['company_url', 'position', 'value'],
  sql: `INSERT INTO ${table} (company_url, position, value) VALUES (?, ?, ?)`,
});

/** A table's statement and the columns it binds, in order. */
export interface TableStatement {
  columns: readonly string[];
  sql: string;
}

/** Every normalized table the operations write, by name. */
export const TABLE_STATEMENTS: Readonly<Record<string, TableStatement>> = {
  companies: { columns: [...COMPANY_COLUMNS, 'first_seen_at', 'updated_at'], sql: UPSERT_COMPANY_SQL },
  company_locations: { columns: LOCATION_COLUMNS, sql: INSERT_LOCATION_SQL },
  company_industries: valueTable('company_industries'),
  company_specialities: valueTable('company_specialities'),
  company_hashtags: valueTable('company_hashtags'),
  similar_companies: { columns: SIMILAR_COLUMNS, sql: UPSERT_SIMILAR_SQL },
  posts: { columns: [...POST_COLUMNS, 'first_seen_at', 'updated_at'], sql: UPSERT_POST_SQL },
  post_media: { columns: ['post_id', 'position', 'url'], sql: 'INSERT INTO post_media (post_id, position, url) VALUES (?, ?, ?)' },
  jobs: { columns: [...JOB_COLUMNS, 'first_seen_at', 'updated_at'], sql: UPSERT_JOB_SQL },
  job_searches: { columns: [...SEARCH_COLUMNS, 'first_seen_at', 'last_seen_at'], sql: UPSERT_SEARCH_SQL },
  job_search_results: { columns: ['search_key', 'job_url', 'position', 'first_seen_at', 'last_seen_at'], sql: UPSERT_RESULT_SQL },
};
