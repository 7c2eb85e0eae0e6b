/**
 * The dataset on PostgreSQL: src/store/schema.ts (SQLite) table for table and column for column, same names,
 * keys, unique indexes and indexes, so the public contract (docs/schema.md) reads the same on both engines.
 * `migrations/postgres/` is generated from this file (`npm run db:generate:pg`); views, SQLite-compatible SQL
 * functions and raw_body() are a hand-written migration there. test/pg-schema-parity.test.ts compares the two.
 *
 * Columns are in SQLite's physical order (columns later migrations added there come last here too), so
 * `SELECT *` gives the same columns in the same order on both engines.
 *
 * Type mapping (docs/postgres.md):
 * - ISO-8601 text timestamps (`*_at`) -> timestamptz. Days (`posted_on`, `posted_date`) stay `YYYY-MM-DD` text,
 *   as on SQLite, so the ready queries that compare them with date text work unchanged.
 * - Booleans stored 0/1 -> smallint 0/1, not boolean: `is_headquarter = 1` in users' SQL keeps working.
 * - Columns holding JSON text -> jsonb; values of undocumented type (SQLite's BLOB "as given") -> jsonb too,
 *   so a number stays a number and a string a string.
 * - Integer ids -> bigint identity (BY DEFAULT, so `netingest copy` keeps the ids); references to them bigint.
 * - REAL -> double precision. Raw bodies -> text, always as received (`body_encoding` NULL): PostgreSQL
 *   compresses large values itself (TOAST), and raw_body() stays plain SQL.
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import type { AnswerAnomalyKind, RunStatus, TaskStatus } from '../schema.ts';

/** An ISO timestamp column, read back as PostgreSQL's text form. */
const at = (name: string) => timestamp(name, { withTimezone: true, mode: 'string' });
/** An id or a reference to one. */
const id = (name: string) => bigint(name, { mode: 'number' });
/** A value of undocumented type ("as given"): jsonb keeps numbers, strings and booleans apart. */
const asGiven = (name: string) => jsonb(name);

// ---------------------------------------------------------------------------------------------------------
// Companies (similar-companies)
// ---------------------------------------------------------------------------------------------------------

export const companies = pgTable(
  'companies',
  {
    url: text('url').primaryKey(),
    name: text('name'),
    universalName: text('universal_name'),
    type: text('type'),
    objectUrn: bigint('object_urn', { mode: 'number' }),
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
    fundingData: jsonb('funding_data'),
    firstSeenAt: at('first_seen_at').notNull(),
    updatedAt: at('updated_at').notNull(),
  },
  (t) => [index('companies_universal_name_idx').on(t.universalName)],
);

export const companyLocations = pgTable(
  'company_locations',
  {
    companyUrl: text('company_url')
      .notNull()
      .references(() => companies.url, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    isHeadquarter: smallint('is_headquarter').notNull(),
    city: text('city'),
    country: text('country'),
    geographicArea: text('geographic_area'),
    isPrimary: asGiven('is_primary'),
    line1: text('line1'),
    line2: asGiven('line2'),
    postalCode: text('postal_code'),
    countryName: text('country_name'),
  },
  (t) => [
    primaryKey({ columns: [t.companyUrl, t.position] }),
    index('company_locations_country_idx').on(t.country),
    index('company_locations_country_name_idx').on(t.countryName),
  ],
);

export const companyIndustries = pgTable(
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

export const companySpecialities = pgTable(
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

export const companyHashtags = pgTable(
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

export const similarCompanies = pgTable(
  'similar_companies',
  {
    referenceUrl: text('reference_url').notNull(),
    filterKey: text('filter_key').notNull(),
    companyUrl: text('company_url')
      .notNull()
      .references(() => companies.url, { onDelete: 'cascade' }),
    filters: jsonb('filters').notNull(),
    rank: integer('rank').notNull(),
    page: integer('page').notNull(),
    relevancyScore: doublePrecision('relevancy_score'),
    relevancyGrade: text('relevancy_grade'),
    firstSeenAt: at('first_seen_at').notNull(),
    lastSeenAt: at('last_seen_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.referenceUrl, t.filterKey, t.companyUrl] }),
    index('similar_companies_company_url_idx').on(t.companyUrl),
  ],
);

// ---------------------------------------------------------------------------------------------------------
// Posts (post-details)
// ---------------------------------------------------------------------------------------------------------

export const posts = pgTable(
  'posts',
  {
    postId: text('post_id').primaryKey(),
    url: text('url').notNull(),
    authorName: text('author_name'),
    authorHeadline: text('author_headline'),
    authorUrl: text('author_url'),
    authorProfileImage: text('author_profile_image'),
    postedRaw: text('posted_raw'),
    textContent: text('text_content'),
    hashtags: jsonb('hashtags'),
    mediaDescription: text('media_description'),
    reactions: integer('reactions'),
    commentsCount: integer('comments_count'),
    firstSeenAt: at('first_seen_at').notNull(),
    updatedAt: at('updated_at').notNull(),
    postedOn: text('posted_on'),
  },
  (t) => [index('posts_author_url_idx').on(t.authorUrl), index('posts_url_idx').on(t.url), index('posts_posted_on_idx').on(t.postedOn)],
);

export const postMedia = pgTable(
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

export const jobs = pgTable(
  'jobs',
  {
    url: text('url').primaryKey(),
    title: text('title'),
    companyName: text('company_name'),
    companyLink: text('company_link'),
    location: text('location'),
    postedTimestamp: bigint('posted_timestamp', { mode: 'number' }),
    postedDate: text('posted_date'),
    isActivelyHiring: smallint('is_actively_hiring'),
    companyLogoUrl: text('company_logo_url'),
    descriptionHtml: text('description_html'),
    description: text('description'),
    employmentType: text('employment_type'),
    industries: text('industries'),
    jobFunction: text('job_function'),
    seniorityLevel: text('seniority_level'),
    firstSeenAt: at('first_seen_at').notNull(),
    updatedAt: at('updated_at').notNull(),
  },
  (t) => [
    index('jobs_posted_date_idx').on(t.postedDate),
    index('jobs_company_name_idx').on(t.companyName),
    index('jobs_company_link_idx').on(t.companyLink),
  ],
);

export const jobSearches = pgTable('job_searches', {
  searchKey: text('search_key').primaryKey(),
  keywords: text('keywords'),
  location: text('location'),
  timePosted: text('time_posted'),
  experienceLevels: text('experience_levels'),
  jobTypes: text('job_types'),
  workplaceTypes: text('workplace_types'),
  companyIds: text('company_ids'),
  firstSeenAt: at('first_seen_at').notNull(),
  lastSeenAt: at('last_seen_at').notNull(),
});

export const jobSearchResults = pgTable(
  'job_search_results',
  {
    searchKey: text('search_key')
      .notNull()
      .references(() => jobSearches.searchKey, { onDelete: 'cascade' }),
    jobUrl: text('job_url')
      .notNull()
      .references(() => jobs.url, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    firstSeenAt: at('first_seen_at').notNull(),
    lastSeenAt: at('last_seen_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.searchKey, t.jobUrl] }),
    index('job_search_results_job_url_idx').on(t.jobUrl),
  ],
);

// ---------------------------------------------------------------------------------------------------------
// Bookkeeping. Run and task ids are plain references, not foreign keys, as on SQLite.
// ---------------------------------------------------------------------------------------------------------

export const runs = pgTable(
  'runs',
  {
    id: id('id').primaryKey().generatedByDefaultAsIdentity(),
    jobs: jsonb('jobs').notNull(),
    startedAt: at('started_at').notNull(),
    endedAt: at('ended_at'),
    status: text('status').$type<RunStatus>().notNull(),
    pid: integer('pid'),
    host: text('host'),
    creditsAtStart: doublePrecision('credits_at_start'),
    creditsAtEnd: doublePrecision('credits_at_end'),
    creditsSpent: doublePrecision('credits_spent'),
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

export const tasks = pgTable(
  'tasks',
  {
    id: id('id').primaryKey().generatedByDefaultAsIdentity(),
    job: text('job').notNull(),
    operation: text('operation').notNull(),
    inputKey: text('input_key').notNull(),
    page: integer('page').notNull().default(1),
    requestJson: jsonb('request_json').notNull(),
    inputLine: integer('input_line'),
    status: text('status').$type<TaskStatus>().notNull().default('pending'),
    retryable: smallint('retryable'),
    attempts: integer('attempts').notNull().default(0),
    lastErrorCode: text('last_error_code'),
    lastError: text('last_error'),
    createdAt: at('created_at').notNull(),
    updatedAt: at('updated_at').notNull(),
    completedAt: at('completed_at'),
    runId: id('run_id'),
  },
  (t) => [
    uniqueIndex('tasks_job_input_key_page_uq').on(t.job, t.inputKey, t.page),
    index('tasks_job_status_idx').on(t.job, t.status),
    index('tasks_job_id_idx').on(t.job, t.id),
  ],
);

export const invalidInputs = pgTable(
  'invalid_inputs',
  {
    id: id('id').primaryKey().generatedByDefaultAsIdentity(),
    job: text('job').notNull(),
    file: text('file').notNull(),
    line: integer('line').notNull(),
    field: text('field'),
    value: text('value'),
    reason: text('reason').notNull(),
    runId: id('run_id'),
    createdAt: at('created_at').notNull(),
  },
  (t) => [uniqueIndex('invalid_inputs_job_file_line_uq').on(t.job, t.file, t.line)],
);

export const apiCalls = pgTable(
  'api_calls',
  {
    id: id('id').primaryKey().generatedByDefaultAsIdentity(),
    runId: id('run_id'),
    taskId: id('task_id'),
    operation: text('operation').notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    status: integer('status'),
    errorCode: text('error_code'),
    latencyMs: doublePrecision('latency_ms'),
    totalCredits: doublePrecision('total_credits'),
    creditsUsed: doublePrecision('credits_used'),
    creditsRemaining: doublePrecision('credits_remaining'),
    at: at('at').notNull(),
  },
  (t) => [index('api_calls_run_id_idx').on(t.runId), index('api_calls_task_id_idx').on(t.taskId)],
);

export const rawResponses = pgTable(
  'raw_responses',
  {
    id: id('id').primaryKey().generatedByDefaultAsIdentity(),
    operation: text('operation').notNull(),
    requestKey: text('request_key').notNull(),
    requestJson: jsonb('request_json').notNull(),
    /** The body text exactly as received (never gzipped here: PostgreSQL's TOAST compresses it). */
    body: text('body').notNull(),
    receivedAt: at('received_at').notNull(),
    runId: id('run_id'),
    taskId: id('task_id'),
    errorCode: text('error_code'),
    /** Always NULL on PostgreSQL; kept so the same SQL reads both engines. */
    bodyEncoding: text('body_encoding'),
  },
  (t) => [
    index('raw_responses_run_id_idx').on(t.runId),
    index('raw_responses_task_id_idx').on(t.taskId),
    index('raw_responses_error_code_idx').on(t.errorCode).where(sql`${t.errorCode} IS NOT NULL`),
  ],
);

export const answerAnomalies = pgTable(
  'answer_anomalies',
  {
    id: id('id').primaryKey().generatedByDefaultAsIdentity(),
    rawResponseId: id('raw_response_id').notNull(),
    runId: id('run_id'),
    taskId: id('task_id'),
    operation: text('operation').notNull(),
    requestKey: text('request_key').notNull(),
    kind: text('kind').$type<AnswerAnomalyKind>().notNull(),
    position: integer('position'),
    path: text('path'),
    reason: text('reason').notNull(),
    askedId: text('asked_id'),
    answeredId: text('answered_id'),
    at: at('at').notNull(),
  },
  (t) => [index('answer_anomalies_run_id_idx').on(t.runId), index('answer_anomalies_raw_response_id_idx').on(t.rawResponseId)],
);

export const answerDrift = pgTable(
  'answer_drift',
  {
    runId: id('run_id').notNull(),
    operation: text('operation').notNull(),
    path: text('path').notNull(),
    kind: text('kind').notNull(),
    count: integer('count').notNull(),
    seen: integer('seen').notNull(),
    detail: text('detail'),
  },
  (t) => [primaryKey({ columns: [t.runId, t.operation, t.path, t.kind] })],
);

export const changes = pgTable(
  'changes',
  {
    id: id('id').primaryKey().generatedByDefaultAsIdentity(),
    runId: id('run_id'),
    taskId: id('task_id'),
    at: at('at').notNull(),
    entity: text('entity').notNull(),
    key: text('key').notNull(),
    change: text('change').notNull(),
    field: text('field'),
    old: text('old'),
    new: text('new'),
  },
  (t) => [index('changes_at_idx').on(t.at), index('changes_entity_key_idx').on(t.entity, t.key), index('changes_run_id_idx').on(t.runId)],
);

export const runLock = pgTable(
  'run_lock',
  {
    id: integer('id').primaryKey(),
    pid: integer('pid').notNull(),
    host: text('host').notNull(),
    runId: id('run_id'),
    acquiredAt: at('acquired_at').notNull(),
    heartbeatAt: at('heartbeat_at').notNull(),
    processStart: text('process_start'),
    leaseMs: integer('lease_ms'),
  },
  (t) => [check('run_lock_single_row', sql`${t.id} = 1`)],
);

export const netingestMeta = pgTable('netingest_meta', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
});
