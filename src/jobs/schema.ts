import { z } from 'zod';
import { isAbsolute, resolve } from 'node:path';
import type { SimilarCompaniesAccount } from '../spec/types.ts';
import { JOB_DEFAULTS } from './defaults.ts';
import { specOf } from '../operations/index.ts';
import { JobFileError, type JobIssue } from './job-error.ts';
import { checkJobValue } from './format-issues.ts';
import { SEARCH_QUERY_PARAMS, normalizeParam, type SearchQueryBase } from './search-query.ts';

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
const NAME_RULE = 'must start with a letter or digit and hold only letters, digits, "_", "-" and "." (at most 100 characters)';

const text = z.string().trim().min(1);
const positiveInt = z.number().int().min(1);
const nonNegativeInt = z.number().int().min(0);

/**
 * Rules of the run settings that `netingest run` can also set from the command line (--rate, --concurrency,
 * --reserve, --max-credits): defined once so that a flag accepts exactly what a job file does.
 */
export const RUN_SETTING_RULES = {
  requestsPerMinute: z.number().positive(),
  concurrency: positiveInt,
  reserve: z.number().min(0),
  maxPerRun: z.number().positive(),
} as const;

/** Days a superseded raw body is kept (job setting `keepRawDays`, and `netingest prune --keep-days`). */
export const KEEP_RAW_DAYS_RULE = z.number().min(0);

const common = {
  name: z.string().regex(NAME_PATTERN, { error: NAME_RULE }).optional(),
  /** Free text for people reading the job file. */
  description: z.string().optional(),
  pages: positiveInt.optional(),
  rate: z
    .strictObject({
      requestsPerMinute: RUN_SETTING_RULES.requestsPerMinute.optional(),
      concurrency: RUN_SETTING_RULES.concurrency.optional(),
    })
    .optional(),
  retry: z
    .strictObject({
      retries: nonNegativeInt.optional(),
      minTimeoutMs: nonNegativeInt.optional(),
      maxTimeoutMs: nonNegativeInt.optional(),
      paidRetries: nonNegativeInt.optional(),
      maxUnusableAnswers: positiveInt.optional(),
    })
    .optional(),
  credits: z
    .strictObject({
      reserve: RUN_SETTING_RULES.reserve.optional(),
      maxPerRun: RUN_SETTING_RULES.maxPerRun.nullable().optional(),
    })
    .optional(),
  refreshAfterDays: z.number().min(0).optional(),
  keepRawDays: KEEP_RAW_DAYS_RULE.nullable().optional(),
};

const urlInput = z.strictObject({ csv: text, column: text });

const account = z.strictObject({
  location: z.array(text).optional(),
  employeeSize: z
    .strictObject({
      type: text.optional(),
      range: z
        .array(
          z
            .strictObject({ start: nonNegativeInt, end: nonNegativeInt })
            .refine((r) => r.end >= r.start, { error: 'must not be below start', path: ['end'] }),
        )
        .min(1),
    })
    .optional(),
});

const similarCompanies = z.strictObject({
  ...common,
  operation: z.literal('similar-companies'),
  input: urlInput,
  request: z
    .strictObject({
      account: account.optional(),
      num: positiveInt.optional(),
      page: z.never({ error: 'not allowed here: set "pages" (page 1 to pages is fetched for every input)' }).optional(),
      url: z.never({ error: 'not allowed here: URLs come from the input CSV column' }).optional(),
    })
    .optional(),
});

const postDetails = z.strictObject({
  ...common,
  operation: z.literal('post-details'),
  input: urlInput,
  pages: z.literal(1, { error: 'post-details has one result per post: leave "pages" out or set it to 1' }).optional(),
  request: z
    .strictObject({
      url: z.never({ error: 'not allowed here: URLs come from the input CSV column' }).optional(),
    })
    .optional(),
});

/** A list parameter: an array, or one string with items separated by commas or semicolons. */
const list = z.union([z.array(z.union([z.string(), z.number()])), z.string()], {
  error: 'must be a list of strings, or one string with items separated by "," or ";"',
});

const searchJobs = z.strictObject({
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
      experienceLevels: list.optional(),
      jobTypes: list.optional(),
      workplaceTypes: list.optional(),
      companyIds: list.optional(),
      start: z.never({ error: 'not allowed here: set "pages" (pages of 10 results are fetched via start)' }).optional(),
    })
    .optional(),
});

/** The one schema of a job definition, whether written as JSON or as a `.ts` module. */
export const jobDefinitionSchema = z.discriminatedUnion('operation', [similarCompanies, postDetails, searchJobs]);

/**
 * What every operation shares. The union checks nothing else when it cannot tell the operation, so a definition
 * whose operation is missing or unknown is checked against this too: a misspelt `operation` key is then named
 * with whatever else is wrong. The request's fields depend on the operation, so it is left unchecked here.
 */
const anyOperation = z.strictObject({
  ...common,
  operation: z.unknown().optional(),
  input: z.strictObject({ csv: text, column: z.unknown().optional() }),
  request: z.unknown().optional(),
});

/** A job as written by the user; every field but operation and input is optional. */
export type JobDefinition = z.input<typeof jobDefinitionSchema>;

/** Where a job's input CSV is: as written, and resolved. */
export interface JobInputFile {
  /** The path as written in the job file (used in messages and records). */
  csv: string;
  /** The absolute path, resolved against the working directory at load time. */
  csvPath: string;
}

interface JobCommon {
  name: string;
  description: string | undefined;
  /** Absolute path of the job file; undefined for a job resolved from a value in code. */
  file: string | undefined;
  pages: number;
  rate: { requestsPerMinute: number; concurrency: number };
  /**
   * `maxUnusableAnswers`: paid answers in a row its answer contract cannot read before the run stops sending
   * (see runner/unusable-breaker.ts); absent: max(RUN_DEFAULTS.unusableMinAnswers, rate.concurrency).
   */
  retry: { retries: number; minTimeoutMs: number; maxTimeoutMs: number; paidRetries: number; maxUnusableAnswers?: number };
  credits: { reserve: number; maxPerRun: number | null };
  refreshAfterDays: number;
  /** Superseded raw bodies of this job's tasks older than this are dropped after the job runs; null keeps them. */
  keepRawDays: number | null;
}

export interface SimilarCompaniesJob extends JobCommon {
  operation: 'similar-companies';
  input: JobInputFile & { column: string };
  /** Filters and page size sent with every input; lower-cased, trimmed locations. */
  request: { account: SimilarCompaniesAccount; num: number };
}

export interface PostDetailsJob extends JobCommon {
  operation: 'post-details';
  input: JobInputFile & { column: string };
  request: Record<string, never>;
}

export interface SearchJobsJob extends JobCommon {
  operation: 'search-jobs';
  input: JobInputFile;
  /** Defaults for parameters a row leaves out or empty; lists already split and trimmed. */
  request: SearchQueryBase;
}

/** A loaded job: validated, every default filled in, paths resolved. */
export type Job = SimilarCompaniesJob | PostDetailsJob | SearchJobsJob;

/** Where a definition came from, for names, paths and messages. */
export interface ResolveContext {
  /** The job file as shown in messages (e.g. `jobs/leads.json`). */
  displayName: string;
  /** Absolute path of the job file, if any. */
  file?: string;
  /** Name used when the definition has none (the file's base name). */
  defaultName?: string;
  /** Directory that relative input paths resolve against; default process.cwd(). */
  cwd?: string;
}

/** Validates a definition and fills in every default; throws JobFileError naming the file and each bad field. */
export function resolveJob(value: unknown, ctx: ResolveContext): Job {
  const parsed = checkJobValue(jobDefinitionSchema, value);
  if (!parsed.success) {
    const shared = parsed.issues.some((i) => i.field === 'operation') ? checkJobValue(anyOperation, value) : undefined;
    throw new JobFileError(ctx.displayName, shared?.success === false ? [...parsed.issues, ...shared.issues] : parsed.issues);
  }
  const def = parsed.data;
  const issues: JobIssue[] = [];

  const name = def.name ?? ctx.defaultName;
  if (name === undefined) issues.push({ field: 'name', message: 'is required (no file name to take it from)' });
  else if (!NAME_PATTERN.test(name)) {
    issues.push({ field: 'name', message: `"${name}" (taken from the file name) ${NAME_RULE}; set "name" in the job` });
  }
  const retry = { ...JOB_DEFAULTS.retry, ...def.retry };
  if (retry.minTimeoutMs > retry.maxTimeoutMs) {
    issues.push({ field: 'retry.minTimeoutMs', message: `must not exceed retry.maxTimeoutMs (${retry.maxTimeoutMs})` });
  }
  const cwd = ctx.cwd ?? process.cwd();
  const csv = def.input.csv.trim();
  const csvPath = isAbsolute(csv) ? csv : resolve(cwd, csv);

  const base: JobCommon = {
    name: name ?? '',
    description: def.description,
    file: ctx.file,
    pages: def.pages ?? JOB_DEFAULTS.pages,
    rate: { ...JOB_DEFAULTS.rate, ...def.rate },
    retry,
    credits: {
      reserve: def.credits?.reserve ?? JOB_DEFAULTS.credits.reserve,
      maxPerRun: def.credits?.maxPerRun ?? JOB_DEFAULTS.credits.maxPerRun,
    },
    refreshAfterDays: def.refreshAfterDays ?? specOf(def.operation).refreshAfterDays,
    keepRawDays: def.keepRawDays ?? JOB_DEFAULTS.keepRawDays,
  };

  let job: Job;
  switch (def.operation) {
    case 'similar-companies':
      job = {
        ...base,
        operation: def.operation,
        input: { csv, csvPath, column: def.input.column },
        request: { account: resolveAccount(def.request?.account), num: def.request?.num ?? JOB_DEFAULTS.num },
      };
      break;
    case 'post-details':
      job = { ...base, operation: def.operation, input: { csv, csvPath, column: def.input.column }, request: {} };
      break;
    case 'search-jobs':
      job = { ...base, operation: def.operation, input: { csv, csvPath }, request: resolveSearchDefaults(def.request, issues) };
      break;
  }
  if (issues.length > 0) throw new JobFileError(ctx.displayName, issues);
  return job;
}

/** Trims and lower-cases locations (the service uses lower-case names) and fills the employee-size type. */
function resolveAccount(input: z.output<typeof account> | undefined): SimilarCompaniesAccount {
  const out: SimilarCompaniesAccount = {};
  if (input?.location) out.location = input.location.map((l) => l.toLowerCase());
  if (input?.employeeSize) {
    out.employeeSize = {
      type: input.employeeSize.type ?? JOB_DEFAULTS.employeeSizeType,
      range: input.employeeSize.range.map((r) => ({ start: r.start, end: r.end })),
    };
  }
  return out;
}

type SearchRequestInput = NonNullable<z.output<typeof searchJobs>['request']>;

/** Normalizes the search defaults exactly as CSV cells are (trimmed, lists split, known values checked). */
function resolveSearchDefaults(input: SearchRequestInput | undefined, issues: JobIssue[]): SearchQueryBase {
  const out: SearchQueryBase = {};
  if (!input) return out;
  for (const param of SEARCH_QUERY_PARAMS) {
    const raw = input[param];
    if (raw === undefined) continue;
    const r = normalizeParam(param, raw);
    if (!r.ok) issues.push({ field: `request.${param}`, message: r.reason });
    else if (r.value !== undefined) (out as Record<string, string | string[]>)[param] = r.value;
  }
  return out;
}
