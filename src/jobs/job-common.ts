/** What every job definition shares; each operation adds its own `input` and `request` (src/operations). */
import { z } from 'zod';

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
export const NAME_RULE = 'must start with a letter or digit and hold only letters, digits, "_", "-" and "." (at most 100 characters)';

export const text = z.string().trim().min(1);

/** Each job number's range (docs/jobs.md): a typo or exponent (`pages: 1e9`) is refused by name, not left to exhaust memory or overflow a date. */
export const JOB_RANGES = {
  /** Result pages per input: 100 pages of search-jobs are 1,000 results. */
  pages: { min: 1, max: 100 },
  /** similar-companies' companies per page. */
  num: { min: 1, max: 1_000 },
  /** At least one call every 100 minutes; at most 1e9 a minute, which the benches use as "no limit". */
  requestsPerMinute: { min: 0.01, max: 1e9 },
  concurrency: { min: 1, max: 1_000 },
  retries: { min: 0, max: 100 },
  /** Back-off delays: at most an hour. */
  timeoutMs: { min: 0, max: 3_600_000 },
  maxUnusableAnswers: { min: 1, max: 1_000_000 },
  /** credits.reserve and credits.maxPerRun. */
  credits: { min: 0, max: 1e12 },
  /** refreshAfterDays and keepRawDays: a century at most. */
  days: { min: 0, max: 36_500 },
  /** similar-companies' employeeSize range bounds. */
  employees: { min: 0, max: 1e9 },
} as const;

const R = JOB_RANGES;
/** A whole number in a range of JOB_RANGES. */
export function wholeIn(range: { min: number; max: number }) {
  return z.number().int().min(range.min).max(range.max);
}

/** Run settings `netingest run` flags override, defined once: a flag takes what a job file does. `abort` tells <= 0 apart from out of range. */
export const RUN_SETTING_RULES = {
  requestsPerMinute: z.number().positive({ abort: true }).min(R.requestsPerMinute.min).max(R.requestsPerMinute.max),
  concurrency: wholeIn(R.concurrency),
  reserve: z.number().min(R.credits.min).max(R.credits.max),
  maxPerRun: z.number().positive({ abort: true }).max(R.credits.max),
} as const;

/** Days a superseded raw body is kept (job setting `keepRawDays`, and `netingest prune --keep-days`). */
export const KEEP_RAW_DAYS_RULE = z.number().min(R.days.min).max(R.days.max);

/** The settings every job definition may hold. */
export const common = {
  name: z.string().regex(NAME_PATTERN, { error: NAME_RULE }).optional(),
  /** Free text for people reading the job file. */
  description: z.string().optional(),
  pages: wholeIn(R.pages).optional(),
  rate: z
    .strictObject({
      requestsPerMinute: RUN_SETTING_RULES.requestsPerMinute.optional(),
      concurrency: RUN_SETTING_RULES.concurrency.optional(),
    })
    .optional(),
  retry: z
    .strictObject({
      retries: wholeIn(R.retries).optional(),
      minTimeoutMs: wholeIn(R.timeoutMs).optional(),
      maxTimeoutMs: wholeIn(R.timeoutMs).optional(),
      paidRetries: wholeIn(R.retries).optional(),
      maxUnusableAnswers: wholeIn(R.maxUnusableAnswers).optional(),
    })
    .optional(),
  credits: z
    .strictObject({
      reserve: RUN_SETTING_RULES.reserve.optional(),
      maxPerRun: RUN_SETTING_RULES.maxPerRun.nullable().optional(),
    })
    .optional(),
  refreshAfterDays: z.number().min(R.days.min).max(R.days.max).optional(),
  keepRawDays: KEEP_RAW_DAYS_RULE.nullable().optional(),
};

/** The input of an operation reading one URL column. */
export const urlInput = z.strictObject({ csv: text, column: text });

/** Where a job's input CSV is: as written, and resolved. */
export interface JobInputFile {
  /** The path as written in the job file (used in messages and records). */
  csv: string;
  /** The absolute path, resolved against the working directory at load time. */
  csvPath: string;
}

export interface JobCommon {
  name: string;
  description: string | undefined;
  /** Absolute path of the job file; undefined for a job resolved from a value in code. */
  file: string | undefined;
  pages: number;
  rate: { requestsPerMinute: number; concurrency: number };
  /** `maxUnusableAnswers`: this job's own RUN_DEFAULTS.unusableMinAnswers, whatever its concurrency (runner/breakers.ts). */
  retry: { retries: number; minTimeoutMs: number; maxTimeoutMs: number; paidRetries: number; maxUnusableAnswers?: number };
  credits: { reserve: number; maxPerRun: number | null };
  refreshAfterDays: number;
  /** Superseded raw bodies of this job's tasks older than this are dropped after the job runs; null keeps them. */
  keepRawDays: number | null;
}

