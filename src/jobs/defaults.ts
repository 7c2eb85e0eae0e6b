/** Every default of a job definition, in one place. A job file states only what differs. */
export const JOB_DEFAULTS = {
  /** Result pages fetched per input (similar-companies: `page` 1..pages; search-jobs: `start` 0, 10, ...). */
  pages: 1,
  /** similar-companies: companies per page. */
  num: 10,
  /** similar-companies: `account.employeeSize.type` when left out (the only value the spec shows). */
  employeeSizeType: 'RANGE',
  rate: {
    /** Calls started per sliding minute. Polite by default (the provider's free plan allows 60/min); raise it to your plan. */
    requestsPerMinute: 60,
    /** Calls in flight at once. */
    concurrency: 4,
  },
  retry: {
    /** Retries of a retryable failure (timeouts, 5xx, 429) after the first attempt. */
    retries: 5,
    minTimeoutMs: 500,
    maxTimeoutMs: 30_000,
    /** Retries in a run of an unusable 200 (cut off, not JSON): each likely paid, a repeating fault hits every try; the next run picks it up. */
    paidRetries: 1,
  },
  credits: {
    /** Credits left untouched: the run stops before the balance would fall below this. */
    reserve: 0,
    /** Most credits one run may spend; null means no limit beyond the balance and the reserve. */
    maxPerRun: null as number | null,
  },
  // refreshAfterDays: by operation, its spec's (src/operations/<name>.ts); fractions allowed (0.5 is twelve hours).
  /** Days a superseded raw body is kept before the job's run drops it (as `netingest prune` does); null keeps all. */
  keepRawDays: null as number | null,
} as const;
