/**
 * What every job definition shares, whatever its operation: the common settings' rules and the shapes of a
 * resolved job's common part. Each operation adds its own `input` and `request` (src/operations/<name>.ts).
 */
import { z } from 'zod';

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
export const NAME_RULE = 'must start with a letter or digit and hold only letters, digits, "_", "-" and "." (at most 100 characters)';

export const text = z.string().trim().min(1);
export const positiveInt = z.number().int().min(1);
export const nonNegativeInt = z.number().int().min(0);

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

/** The settings every job definition may hold. */
export const common = {
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

