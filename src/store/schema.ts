/**
 * The dataset's one source of truth. `migrations/` is generated from this file by drizzle-kit
 * (`npm run db:generate`) and applied by `openDatabase()`. Table and column names are a public contract:
 * users write SQL against them (docs/schema.md describes every column).
 *
 * Conventions: snake_case names; timestamps are ISO-8601 UTC text (`2026-11-22T13:45:00.000Z`); booleans are
 * integers 0/1; lists and objects are JSON text; positions in ordered child sets are 1-based.
 */
import { sql } from 'drizzle-orm';
import {
  check,
  customType,
  index,
  integer,
  primaryKey,
  real,
  sqliteTable,
  text,
  uniqueIndex,
} from 'drizzle-orm/sqlite-core';

/**
 * A column for values whose type the spec does not show. Declared BLOB so SQLite applies no type affinity:
 * numbers stay numbers and strings stay strings (a TEXT column would turn 12 into '12').
 */
const asGiven = customType<{ data: string | number | null; driverData: string | number | null }>({
  dataType() {
    return 'blob';
  },
});

// ---------------------------------------------------------------------------------------------------------
// Companies (similar-companies)
// ---------------------------------------------------------------------------------------------------------

export const companies = sqliteTable(
  'companies',
  {
    url: text('url').primaryKey(),
    name: text('name'),
    universalName: text('universal_name'),
    type: text('type'),
    objectUrn: integer('object_urn'),
    description: text('description'),
    phone: text('phone'),
    followers: asGiven('followers'),
    website: text('website'),
    logo: text('logo'),
    cover: asGiven('cover'),
    tagline: asGiven('tagline'),
    foundedYear: integer('founded_year'),
    staffTotal: integer('staff_total'),
    staffRangeStart: integer('staff_range_start'),
    staffRangeEnd: integer('staff_range_end'),
    fundingData: text('funding_data'),
    firstSeenAt: text('first_seen_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('companies_universal_name_idx').on(t.universalName)],
);

export const companyLocations = sqliteTable(
  'company_locations',
  {
    companyUrl: text('company_url')
      .notNull()
      .references(() => companies.url, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    isHeadquarter: integer('is_headquarter').notNull(),
    city: text('city'),
    country: text('country'),
    /** The country's name, lower-case (`germany` where the service sent `de`): what jobs filter on. */
    countryName: text('country_name'),
    geographicArea: text('geographic_area'),
    isPrimary: asGiven('is_primary'),
    line1: text('line1'),
    line2: asGiven('line2'),
    postalCode: text('postal_code'),
  },
  (t) => [primaryKey({ columns: [t.companyUrl, t.position] }), index('company_locations_country_idx').on(t.country), index('company_locations_country_name_idx').on(t.countryName)],
);

export const companyIndustries = sqliteTable(
  'company_industries',
  {
    companyUrl: text('company_url')
      .notNull()
      .references(() => companies.url, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    value: text('value'),
  },
  (t) => [primaryKey({ columns: [t.companyUrl, t.position] }), index('company_industries_value_idx').on(t.value)],
);

export const companySpecialities = sqliteTable(
  'company_specialities',
  {
    companyUrl: text('company_url')
      .notNull()
      .references(() => companies.url, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    value: text('value'),
  },
  (t) => [primaryKey({ columns: [t.companyUrl, t.position] }), index('company_specialities_value_idx').on(t.value)],
);

export const companyHashtags = sqliteTable(
  'company_hashtags',
  {
    companyUrl: text('company_url')
      .notNull()
      .references(() => companies.url, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    value: text('value'),
  },
  (t) => [primaryKey({ columns: [t.companyUrl, t.position] }), index('company_hashtags_value_idx').on(t.value)],
);

export const similarCompanies = sqliteTable(
  'similar_companies',
  {
    referenceUrl: text('reference_url').notNull(),
    filterKey: text('filter_key').notNull(),
    companyUrl: text('company_url')
      .notNull()
      .references(() => companies.url, { onDelete: 'cascade' }),
    filters: text('filters').notNull(),
    rank: integer('rank').notNull(),
    page: integer('page').notNull(),
    relevancyScore: real('relevancy_score'),
    relevancyGrade: text('relevancy_grade'),
    firstSeenAt: text('first_seen_at').notNull(),
    lastSeenAt: text('last_seen_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.referenceUrl, t.filterKey, t.companyUrl] }),
    index('similar_companies_company_url_idx').on(t.companyUrl),
  ],
);

// ---------------------------------------------------------------------------------------------------------
// Posts (post-details)
// ---------------------------------------------------------------------------------------------------------

export const posts = sqliteTable(
  'posts',
  {
    postId: text('post_id').primaryKey(),
    url: text('url').notNull(),
    authorName: text('author_name'),
    authorHeadline: text('author_headline'),
    authorUrl: text('author_url'),
    authorProfileImage: text('author_profile_image'),
    postedRaw: text('posted_raw'),
    /** `posted_raw` as an ISO day (YYYY-MM-DD); NULL where its day/month order is ambiguous. */
    postedOn: text('posted_on'),
    textContent: text('text_content'),
    hashtags: text('hashtags'),
    mediaDescription: text('media_description'),
    reactions: integer('reactions'),
    commentsCount: integer('comments_count'),
    firstSeenAt: text('first_seen_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('posts_author_url_idx').on(t.authorUrl), index('posts_url_idx').on(t.url), index('posts_posted_on_idx').on(t.postedOn)],
);

export const postMedia = sqliteTable(
  'post_media',
  {
    postId: text('post_id')
      .notNull()
      .references(() => posts.postId, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    url: text('url'),
  },
  (t) => [primaryKey({ columns: [t.postId, t.position] })],
);

// ---------------------------------------------------------------------------------------------------------
// Jobs (search-jobs)
// ---------------------------------------------------------------------------------------------------------

export const jobs = sqliteTable(
  'jobs',
  {
    url: text('url').primaryKey(),
    title: text('title'),
    companyName: text('company_name'),
    companyLink: text('company_link'),
    location: text('location'),
    postedTimestamp: integer('posted_timestamp'),
    postedDate: text('posted_date'),
    isActivelyHiring: integer('is_actively_hiring'),
    companyLogoUrl: text('company_logo_url'),
    descriptionHtml: text('description_html'),
    description: text('description'),
    employmentType: text('employment_type'),
    industries: text('industries'),
    jobFunction: text('job_function'),
    seniorityLevel: text('seniority_level'),
    firstSeenAt: text('first_seen_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [
    index('jobs_posted_date_idx').on(t.postedDate),
    index('jobs_company_name_idx').on(t.companyName),
    index('jobs_company_link_idx').on(t.companyLink),
  ],
);

export const jobSearches = sqliteTable('job_searches', {
  searchKey: text('search_key').primaryKey(),
  keywords: text('keywords'),
  location: text('location'),
  timePosted: text('time_posted'),
  experienceLevels: text('experience_levels'),
  jobTypes: text('job_types'),
  workplaceTypes: text('workplace_types'),
  companyIds: text('company_ids'),
  firstSeenAt: text('first_seen_at').notNull(),
  lastSeenAt: text('last_seen_at').notNull(),
});

export const jobSearchResults = sqliteTable(
  'job_search_results',
  {
    searchKey: text('search_key')
      .notNull()
      .references(() => jobSearches.searchKey, { onDelete: 'cascade' }),
    jobUrl: text('job_url')
      .notNull()
      .references(() => jobs.url, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    firstSeenAt: text('first_seen_at').notNull(),
    lastSeenAt: text('last_seen_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.searchKey, t.jobUrl] }),
    index('job_search_results_job_url_idx').on(t.jobUrl),
  ],
);

// ---------------------------------------------------------------------------------------------------------
// Bookkeeping (written by the runner). Run and task ids are plain references, not foreign keys: the ledger
// must accept its rows in any order the runner writes them.
// ---------------------------------------------------------------------------------------------------------

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

export const runs = sqliteTable(
  'runs',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    jobs: text('jobs').notNull(),
    startedAt: text('started_at').notNull(),
    endedAt: text('ended_at'),
    status: text('status').$type<RunStatus>().notNull(),
    pid: integer('pid'),
    host: text('host'),
    creditsAtStart: real('credits_at_start'),
    creditsAtEnd: real('credits_at_end'),
    creditsSpent: real('credits_spent'),
    tasksTotal: integer('tasks_total').notNull().default(0),
    tasksDone: integer('tasks_done').notNull().default(0),
    tasksNotFound: integer('tasks_not_found').notNull().default(0),
    tasksFailed: integer('tasks_failed').notNull().default(0),
    tasksDeferred: integer('tasks_deferred').notNull().default(0),
    invalidRows: integer('invalid_rows').notNull().default(0),
    calls: integer('calls').notNull().default(0),
    exitCode: integer('exit_code'),
    error: text('error'),
  },
  (t) => [index('runs_started_at_idx').on(t.startedAt)],
);

export const TASK_STATUSES = ['pending', 'done', 'not_found', 'failed', 'deferred'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const tasks = sqliteTable(
  'tasks',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    job: text('job').notNull(),
    operation: text('operation').notNull(),
    inputKey: text('input_key').notNull(),
    page: integer('page').notNull().default(1),
    requestJson: text('request_json').notNull(),
    inputLine: integer('input_line'),
    status: text('status').$type<TaskStatus>().notNull().default('pending'),
    retryable: integer('retryable'),
    attempts: integer('attempts').notNull().default(0),
    lastErrorCode: text('last_error_code'),
    lastError: text('last_error'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
    completedAt: text('completed_at'),
    runId: integer('run_id'),
  },
  (t) => [
    uniqueIndex('tasks_job_input_key_page_uq').on(t.job, t.inputKey, t.page),
    index('tasks_job_status_idx').on(t.job, t.status),
    // The runner pages through a job's tasks in id order: without it each page re-sorted the whole job.
    index('tasks_job_id_idx').on(t.job, t.id),
  ],
);

export const invalidInputs = sqliteTable(
  'invalid_inputs',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    job: text('job').notNull(),
    file: text('file').notNull(),
    line: integer('line').notNull(),
    field: text('field'),
    value: text('value'),
    reason: text('reason').notNull(),
    runId: integer('run_id'),
    createdAt: text('created_at').notNull(),
  },
  (t) => [uniqueIndex('invalid_inputs_job_file_line_uq').on(t.job, t.file, t.line)],
);

export const apiCalls = sqliteTable(
  'api_calls',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    runId: integer('run_id'),
    taskId: integer('task_id'),
    operation: text('operation').notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    status: integer('status'),
    errorCode: text('error_code'),
    latencyMs: real('latency_ms'),
    totalCredits: real('total_credits'),
    creditsUsed: real('credits_used'),
    creditsRemaining: real('credits_remaining'),
    at: text('at').notNull(),
  },
  (t) => [index('api_calls_run_id_idx').on(t.runId), index('api_calls_task_id_idx').on(t.taskId)],
);

export const rawResponses = sqliteTable(
  'raw_responses',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    operation: text('operation').notNull(),
    requestKey: text('request_key').notNull(),
    requestJson: text('request_json').notNull(),
    /** The body text, or its gzip bytes where `body_encoding` says so (see src/store/raw-body.ts). */
    body: text('body').notNull(),
    /** NULL: `body` is the text as received; `gzip`: `body` is that text gzipped (a BLOB). */
    bodyEncoding: text('body_encoding'),
    receivedAt: text('received_at').notNull(),
    runId: integer('run_id'),
    taskId: integer('task_id'),
    /**
     * Null for a body that validated; the error code (SCHEMA) of a paid body that did not, kept so reprocess
     * can recover it after a schema fix. Reprocess sets it back to null once the body validates and replays.
     */
    errorCode: text('error_code'),
  },
  (t) => [
    index('raw_responses_run_id_idx').on(t.runId),
    index('raw_responses_task_id_idx').on(t.taskId),
    // Partial: holds only the kept wrong-shape bodies, so `status` counts them without reading every body.
    index('raw_responses_error_code_idx').on(t.errorCode).where(sql`${t.errorCode} IS NOT NULL`),
  ],
);

/**
 * What a stored answer held that was not stored as a record (written with the answer, rebuilt by reprocess):
 * `no_identity`, a listed record that does not name itself (a company or job without `url`), set aside alone
 * at its `position` while the rest of its page is stored; `other_post`, a post-details answer whose `PostId`
 * names another post than the one asked for (`asked_id`, `answered_id`): stored under the post asked for,
 * never merged into the other.
 */
export const ANSWER_ANOMALY_KINDS = ['no_identity', 'other_post'] as const;
export type AnswerAnomalyKind = (typeof ANSWER_ANOMALY_KINDS)[number];

export const answerAnomalies = sqliteTable(
  'answer_anomalies',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    rawResponseId: integer('raw_response_id').notNull(),
    runId: integer('run_id'),
    taskId: integer('task_id'),
    operation: text('operation').notNull(),
    requestKey: text('request_key').notNull(),
    kind: text('kind').$type<AnswerAnomalyKind>().notNull(),
    /** 1-based position of the record in its list; null for a whole answer. */
    position: integer('position'),
    /** JSON path of the record in the body (`data.content[3]`); null for a whole answer. */
    path: text('path'),
    reason: text('reason').notNull(),
    askedId: text('asked_id'),
    answeredId: text('answered_id'),
    at: text('at').notNull(),
  },
  (t) => [index('answer_anomalies_run_id_idx').on(t.runId), index('answer_anomalies_raw_response_id_idx').on(t.rawResponseId)],
);

/**
 * Drift of a run's answers from the spec, per operation, member path and kind (missing, null, renamed, variant,
 * type, capped): `count` of `seen` (the times the member's parent was there), `detail` as the line says it.
 */
export const answerDrift = sqliteTable(
  'answer_drift',
  {
    runId: integer('run_id').notNull(),
    operation: text('operation').notNull(),
    path: text('path').notNull(),
    kind: text('kind').notNull(),
    count: integer('count').notNull(),
    seen: integer('seen').notNull(),
    detail: text('detail'),
  },
  (t) => [primaryKey({ columns: [t.runId, t.operation, t.path, t.kind] })],
);

/**
 * The history: one row per change an answer made to what was stored (store/history/): a company, post or job
 * first seen (`added`, no field) or one of its values `changed` (field, old, new), an item of one of its sets
 * `added` or `removed` (field: locations, industries, media...), a member of a list (a company's lookalikes, a
 * search's results) `added` or `removed` (old or new: the member's URL). Values are text. Never pruned.
 */
export const changes = sqliteTable(
  'changes',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    runId: integer('run_id'),
    taskId: integer('task_id'),
    at: text('at').notNull(),
    entity: text('entity').notNull(),
    key: text('key').notNull(),
    change: text('change').notNull(),
    field: text('field'),
    old: text('old'),
    new: text('new'),
  },
  (t) => [index('changes_at_idx').on(t.at), index('changes_entity_key_idx').on(t.entity, t.key), index('changes_run_id_idx').on(t.runId)],
);

export const runLock = sqliteTable(
  'run_lock',
  {
    id: integer('id').primaryKey(),
    pid: integer('pid').notNull(),
    host: text('host').notNull(),
    runId: integer('run_id'),
    acquiredAt: text('acquired_at').notNull(),
    heartbeatAt: text('heartbeat_at').notNull(),
    /** The holder's process start (boot id and /proc start time): a pid reused by another process differs. */
    processStart: text('process_start'),
    /** How long after its last heartbeat another host may take the lock over; null: the default lease. */
    leaseMs: integer('lease_ms'),
  },
  (t) => [check('run_lock_single_row', sql`${t.id} = 1`)],
);

/** Key/value facts about the database itself (schema version, the build that last migrated it). */
export const netingestMeta = sqliteTable('netingest_meta', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
});
