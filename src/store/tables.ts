/**
 * The tables, defined once for both engines (schema.ts, pg/schema.ts, migrations, ingest/tables.ts derive from them);
 * names are a public contract (docs/schema.md). Timestamps ISO-8601 UTC, booleans 0/1, lists JSON, positions 1-based.
 * Columns in physical order (later migrations' last) so `SELECT *` reads alike on both engines.
 */
import { sql } from 'drizzle-orm';
import { bigint, flag, given, int, json, real, table, text, time, type Columns, type SelectOf, type TableDef } from './table-kit.ts';

// --- Companies (similar-companies) -----------------------------------------------------------------------

const companies = table('companies', {
  url: text().primaryKey(),
  name: text(),
  universal_name: text(),
  type: text(),
  object_urn: bigint(),
  description: text(),
  phone: text(),
  followers: given(),
  website: text(),
  logo: text(),
  cover: given(),
  tagline: given(),
  founded_year: int(),
  staff_total: int(),
  staff_range_start: int(),
  staff_range_end: int(),
  funding_data: json(),
  first_seen_at: time().notNull(),
  updated_at: time().notNull(),
}, { indexes: { companies_universal_name_idx: ['universal_name'] }, written: 'upsert' });

const companyUrl = () => text().notNull().references(companies.columns.url);

const companyLocations = table('company_locations', {
  company_url: companyUrl(),
  position: int().notNull(),
  is_headquarter: flag().notNull(),
  city: text(),
  country: text(),
  geographic_area: text(),
  is_primary: given(),
  line1: text(),
  line2: given(),
  postal_code: text(),
  /** The country's name, lower-case (`germany` where the service sent `de`): what jobs filter on. */
  country_name: text(),
}, {
  primaryKey: ['company_url', 'position'],
  indexes: { company_locations_country_idx: ['country'], company_locations_country_name_idx: ['country_name'] },
  written: 'set',
});

/** A company's ordered list of strings. */
const companyValues = <Name extends string>(name: Name) =>
  table(name, { company_url: companyUrl(), position: int().notNull(), value: text() }, {
    primaryKey: ['company_url', 'position'],
    indexes: { [`${name}_value_idx`]: ['value'] },
    written: 'set',
  });

const companyIndustries = companyValues('company_industries');
const companySpecialities = companyValues('company_specialities');
const companyHashtags = companyValues('company_hashtags');

const similarCompanies = table('similar_companies', {
  reference_url: text().notNull(),
  filter_key: text().notNull(),
  company_url: companyUrl(),
  filters: json().notNull(),
  rank: int().notNull(),
  page: int().notNull(),
  relevancy_score: real(),
  relevancy_grade: text(),
  first_seen_at: time().notNull(),
  last_seen_at: time().notNull(),
}, {
  primaryKey: ['reference_url', 'filter_key', 'company_url'],
  indexes: { similar_companies_company_url_idx: ['company_url'] },
  written: 'upsert',
});

// --- Posts (post-details) --------------------------------------------------------------------------------

const posts = table('posts', {
  post_id: text().primaryKey(),
  url: text().notNull(),
  author_name: text(),
  author_headline: text(),
  author_url: text(),
  author_profile_image: text(),
  posted_raw: text(),
  text_content: text(),
  hashtags: json(),
  media_description: text(),
  reactions: int(),
  comments_count: int(),
  first_seen_at: time().notNull(),
  updated_at: time().notNull(),
  /** `posted_raw` as an ISO day (YYYY-MM-DD text on both engines); NULL where its day/month order is ambiguous. */
  posted_on: text(),
}, {
  indexes: { posts_author_url_idx: ['author_url'], posts_url_idx: ['url'], posts_posted_on_idx: ['posted_on'] },
  written: 'upsert',
});

const postMedia = table('post_media', {
  post_id: text().notNull().references(posts.columns.post_id),
  position: int().notNull(),
  url: text(),
}, { primaryKey: ['post_id', 'position'], written: 'set' });

// --- Jobs (search-jobs) ----------------------------------------------------------------------------------

const jobs = table('jobs', {
  url: text().primaryKey(),
  title: text(),
  company_name: text(),
  company_link: text(),
  location: text(),
  posted_timestamp: bigint(),
  posted_date: text(),
  is_actively_hiring: flag(),
  company_logo_url: text(),
  description_html: text(),
  description: text(),
  employment_type: text(),
  industries: text(),
  job_function: text(),
  seniority_level: text(),
  first_seen_at: time().notNull(),
  updated_at: time().notNull(),
}, {
  indexes: { jobs_posted_date_idx: ['posted_date'], jobs_company_name_idx: ['company_name'], jobs_company_link_idx: ['company_link'] },
  written: 'upsert',
});

const jobSearches = table('job_searches', {
  search_key: text().primaryKey(),
  keywords: text(),
  location: text(),
  time_posted: text(),
  experience_levels: text(),
  job_types: text(),
  workplace_types: text(),
  company_ids: text(),
  first_seen_at: time().notNull(),
  last_seen_at: time().notNull(),
}, { written: 'upsert' });

const jobSearchResults = table('job_search_results', {
  search_key: text().notNull().references(jobSearches.columns.search_key),
  job_url: text().notNull().references(jobs.columns.url),
  position: int().notNull(),
  first_seen_at: time().notNull(),
  last_seen_at: time().notNull(),
  // The page of the answer that listed it (1 for start 0): a page may hold more or fewer than 10, so position / 10
  // does not tell. Null only before its migration filled it in (from position, the page size an earlier release assumed).
  page: int(),
}, { primaryKey: ['search_key', 'job_url'], indexes: { job_search_results_job_url_idx: ['job_url'] }, written: 'upsert' });

// --- Bookkeeping (written by the runner) -----------------------------------------------------------------
// Run and task ids are plain references, not foreign keys: the ledger must accept its rows in any order the runner writes them.

export const RUN_STATUSES = [
  'running',
  'completed',
  'completed_with_failures',
  'stopped_credits',
  'stopped_throttled',
  // Stopped sending because paid answers in a row could not be read (UNUSABLE_ANSWERS); the rest deferred.
  'stopped_unusable',
  'interrupted',
  'failed',
  // Its process died (SIGKILL, a crash, a second SIGINT) before it wrote its end; closed by a later run.
  'abandoned',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

const runs = table('runs', {
  id: bigint().autoId(),
  jobs: json().notNull(),
  started_at: time().notNull(),
  ended_at: time(),
  status: text().$type<RunStatus>().notNull(),
  pid: int(),
  host: text(),
  credits_at_start: real(),
  credits_at_end: real(),
  credits_spent: real(),
  tasks_total: int().notNull().default(0),
  tasks_done: int().notNull().default(0),
  tasks_not_found: int().notNull().default(0),
  tasks_failed: int().notNull().default(0),
  tasks_deferred: int().notNull().default(0),
  invalid_rows: int().notNull().default(0),
  calls: int().notNull().default(0),
  exit_code: int(),
  error: text(),
  /**
   * Calls per minute each job of the run was worked at (its job file's `rate.requestsPerMinute`, or `--rate`):
   * `{"lookalikes": 120}`. Null for a run that worked no job, wrote no end, or predates the column.
   */
  job_rates: json(),
  /**
   * 1 for a `--refresh` run, 0 for another: a refresh killed part way is resumed by the next (ledger.ts's
   * deferredSinceReads). Null for a run an earlier release made.
   */
  refresh: flag(),
}, { indexes: { runs_started_at_idx: ['started_at'] } });

export const TASK_STATUSES = ['pending', 'done', 'not_found', 'failed', 'deferred'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

const tasks = table('tasks', {
  id: bigint().autoId(),
  job: text().notNull(),
  operation: text().notNull(),
  input_key: text().notNull(),
  page: int().notNull().default(1),
  request_json: json().notNull(),
  input_line: int(),
  status: text().$type<TaskStatus>().notNull().default('pending'),
  retryable: flag(),
  attempts: int().notNull().default(0),
  last_error_code: text(),
  last_error: text(),
  created_at: time().notNull(),
  updated_at: time().notNull(),
  completed_at: time(),
  run_id: bigint(),
}, {
  indexes: {
    tasks_job_input_key_page_uq: { on: ['job', 'input_key', 'page'], unique: true },
    // SQLite only: a settle there rewrites only the indexes whose columns change, and status, the runs' end and the
    // report read by it. On PostgreSQL an index naming `status` makes each settle rewrite every index (no HOT update).
    tasks_job_status_idx: { on: ['job', 'status'], only: 'sqlite' },
    // The runner pages through a job's tasks in id order: without it each page re-sorted the whole job.
    tasks_job_id_idx: ['job', 'id'],
  },
});

const invalidInputs = table('invalid_inputs', {
  id: bigint().autoId(),
  job: text().notNull(),
  file: text().notNull(),
  line: int().notNull(),
  field: text(),
  value: text(),
  reason: text().notNull(),
  run_id: bigint(),
  created_at: time().notNull(),
}, { indexes: { invalid_inputs_job_file_line_uq: { on: ['job', 'file', 'line'], unique: true } } });

const apiCalls = table('api_calls', {
  id: bigint().autoId(),
  run_id: bigint(),
  task_id: bigint(),
  operation: text().notNull(),
  method: text().notNull(),
  path: text().notNull(),
  status: int(),
  error_code: text(),
  latency_ms: real(),
  total_credits: real(),
  credits_used: real(),
  credits_remaining: real(),
  at: time().notNull(),
}, { indexes: { api_calls_run_id_idx: ['run_id'], api_calls_task_id_idx: ['task_id'] } });

const rawResponses = table('raw_responses', {
  id: bigint().autoId(),
  operation: text().notNull(),
  request_key: text().notNull(),
  request_json: json().notNull(),
  /** The text, or on SQLite its gzip bytes per `body_encoding` (raw-body.ts); PostgreSQL compresses it (TOAST). */
  body: text().notNull(),
  received_at: time().notNull(),
  run_id: bigint(),
  task_id: bigint(),
  /** Null once a body validated; else its error code (SCHEMA), kept so reprocess can recover it after a schema fix. */
  error_code: text(),
  /** NULL: `body` is the text as received (always, on PostgreSQL); `gzip`: `body` is that text gzipped (a BLOB). */
  body_encoding: text(),
}, {
  indexes: {
    raw_responses_run_id_idx: ['run_id'],
    raw_responses_task_id_idx: ['task_id'],
    // Partial: holds only the kept wrong-shape bodies, so `status` counts them without reading every body.
    raw_responses_error_code_idx: { on: ['error_code'], where: (t) => sql`${t.error_code} IS NOT NULL` },
  },
});

/**
 * What an answer held that was not stored as a record (rebuilt by reprocess): `no_identity`, a listed record without
 * `url`, set aside while its page is stored; `other_post`, an answer naming another post, stored under the one asked for.
 */
export const ANSWER_ANOMALY_KINDS = ['no_identity', 'other_post'] as const;
export type AnswerAnomalyKind = (typeof ANSWER_ANOMALY_KINDS)[number];

const answerAnomalies = table('answer_anomalies', {
  id: bigint().autoId(),
  raw_response_id: bigint().notNull(),
  run_id: bigint(),
  task_id: bigint(),
  operation: text().notNull(),
  request_key: text().notNull(),
  kind: text().$type<AnswerAnomalyKind>().notNull(),
  /** 1-based position of the record in its list; null for a whole answer. */
  position: int(),
  /** JSON path of the record in the body (`data.content[3]`); null for a whole answer. */
  path: text(),
  reason: text().notNull(),
  asked_id: text(),
  answered_id: text(),
  at: time().notNull(),
}, { indexes: { answer_anomalies_run_id_idx: ['run_id'], answer_anomalies_raw_response_id_idx: ['raw_response_id'] } });

/**
 * Drift of a run's answers from the spec, per operation, member path and kind (missing, null, renamed, variant,
 * type, capped): `count` of `seen` (the times the member's parent was there), `detail` as the line says it.
 */
const answerDrift = table('answer_drift', {
  run_id: bigint().notNull(),
  operation: text().notNull(),
  path: text().notNull(),
  kind: text().notNull(),
  count: int().notNull(),
  seen: int().notNull(),
  detail: text(),
}, { primaryKey: ['run_id', 'operation', 'path', 'kind'] });

/**
 * The history (store/history/), a row per change an answer made: an entity first seen (`added`, no field), a value
 * `changed` (field, old, new), a set item or list member (its URL) `added` or `removed`. Values are text; never pruned.
 */
const changes = table('changes', {
  id: bigint().autoId(),
  run_id: bigint(),
  task_id: bigint(),
  at: time().notNull(),
  entity: text().notNull(),
  key: text().notNull(),
  change: text().notNull(),
  field: text(),
  old: text(),
  new: text(),
}, { indexes: { changes_at_idx: ['at'], changes_entity_key_idx: ['entity', 'key'], changes_run_id_idx: ['run_id'] } });

const runLock = table('run_lock', {
  id: int().primaryKey(),
  pid: int().notNull(),
  host: text().notNull(),
  run_id: bigint(),
  acquired_at: time().notNull(),
  heartbeat_at: time().notNull(),
  /** The holder's process start (boot id and /proc start time): a pid reused by another process differs. */
  process_start: text(),
  /** How long after its last heartbeat another host may take the lock over; null: the default lease. */
  lease_ms: int(),
}, { checks: (t) => ({ run_lock_single_row: sql`${t.id} = 1` }) });

/** Key/value facts about the database itself (schema version, the build that last migrated it). */
const netingestMeta = table('netingest_meta', { key: text().primaryKey(), value: text().notNull() });

/** Every table of the dataset, parents before the children whose foreign keys name them. */
export const DATASET_TABLES = [
  companies, companyLocations, companyIndustries, companySpecialities, companyHashtags, similarCompanies,
  posts, postMedia, jobs, jobSearches, jobSearchResults,
  runs, tasks, invalidInputs, apiCalls, rawResponses, answerAnomalies, answerDrift, changes, runLock, netingestMeta,
] as const;

export type DatasetTable = (typeof DATASET_TABLES)[number];
/** A row of table `Name` as read back. */
export type StoredRow<Name extends DatasetTable['name']> = SelectOf<Extract<DatasetTable, { name: Name }>>;
/** A row of the input that could not become a task (invalid_inputs), as the run's summary holds it. */
export type InvalidInputRow = Omit<StoredRow<'invalid_inputs'>, 'id' | 'run_id' | 'created_at'>;
/** The tables the operations' rows are written to. */
export type NormalizedTable = DatasetTable extends infer D ? (D extends TableDef<infer N, Columns, infer W> ? (undefined extends W ? never : N) : never) : never;

/** Columns the store fills itself, not the operations' rows (posts.posted_on: from the dataset's day order). */
export type StoreFilled = { posts: 'posted_on' };

/** The normalized tables, children before parents (the order to empty them in). */
export const NORMALIZED_TABLES = DATASET_TABLES.filter((t) => t.written !== undefined).map((t) => t.name as NormalizedTable).reverse();
