import { describe, expect, it } from 'vitest';
import { resolveJob, type Job } from '../../src/jobs/schema.ts';
import { JOB_DEFAULTS } from '../../src/jobs/defaults.ts';
import { JobFileError } from '../../src/jobs/job-error.ts';
import { UsageError } from '../../src/errors.ts';
import { defineJob } from '../../src/index.ts';

const ctx = { displayName: 'jobs/t.json', defaultName: 't', cwd: '/work/x' };

function errorOf(value: unknown): JobFileError {
  try {
    resolveJob(value, ctx);
  } catch (err) {
    expect(err).toBeInstanceOf(JobFileError);
    return err as JobFileError;
  }
  throw new Error('expected a JobFileError');
}

const similar = { operation: 'similar-companies', input: { csv: 'data/leads.csv', column: 'company_url' } } as const;
const posts = { operation: 'post-details', input: { csv: 'data/posts.csv', column: 'post_url' } } as const;
const search = { operation: 'search-jobs', input: { csv: 'data/q.csv' } } as const;

describe('job schema', () => {
  it('fills every default from JOB_DEFAULTS and resolves the CSV path against cwd', () => {
    const job = resolveJob(similar, ctx);
    expect(job).toEqual({
      name: 't',
      description: undefined,
      file: undefined,
      operation: 'similar-companies',
      input: { csv: 'data/leads.csv', csvPath: '/work/x/data/leads.csv', column: 'company_url' },
      request: { account: {}, num: 10 },
      pages: 1,
      rate: { requestsPerMinute: 60, concurrency: 4 },
      retry: { retries: 5, minTimeoutMs: 500, maxTimeoutMs: 30_000, paidRetries: 1 },
      credits: { reserve: 0, maxPerRun: null },
      refreshAfterDays: 30,
      keepRawDays: null,
    } satisfies Job);
    expect(JOB_DEFAULTS.rate.requestsPerMinute).toBe(60);
  });

  it.each([
    [similar, 30],
    [posts, 7],
    [search, 0.5],
  ] as const)('defaults refreshAfterDays by operation (%#)', (def, days) => {
    expect(resolveJob(def, ctx).refreshAfterDays).toBe(days);
    expect(resolveJob({ ...def, refreshAfterDays: 0.25 }, ctx).refreshAfterDays).toBe(0.25);
  });

  it('keeps what the definition sets and merges partial groups with the defaults', () => {
    const job = resolveJob(
      {
        ...similar,
        name: 'lookalikes',
        input: { csv: '/abs/leads.csv', column: 'url' },
        request: { account: { location: [' Germany '], employeeSize: { range: [{ start: 1, end: 10 }] } }, num: 25 },
        pages: 3,
        rate: { requestsPerMinute: 120 },
        retry: { retries: 0 },
        credits: { maxPerRun: 1000 },
      },
      ctx,
    );
    expect(job.name).toBe('lookalikes');
    expect(job.input).toEqual({ csv: '/abs/leads.csv', csvPath: '/abs/leads.csv', column: 'url' });
    expect(job.request).toEqual({
      account: { location: ['germany'], employeeSize: { type: 'RANGE', range: [{ start: 1, end: 10 }] } },
      num: 25,
    });
    expect(job.pages).toBe(3);
    expect(job.rate).toEqual({ requestsPerMinute: 120, concurrency: 4 });
    expect(job.retry).toEqual({ retries: 0, minTimeoutMs: 500, maxTimeoutMs: 30_000, paidRetries: 1 });
    expect(job.credits).toEqual({ reserve: 0, maxPerRun: 1000 });
  });

  it('normalizes search defaults like CSV cells: lists split, known values spelled the service way', () => {
    const job = resolveJob(
      { ...search, request: { keywords: ' nurse ', jobTypes: 'Full-time; part time', companyIds: [1441, ' 22 '], timePosted: 'PAST_WEEK' } },
      ctx,
    );
    expect(job.request).toEqual({ keywords: 'nurse', jobTypes: ['full time', 'part time'], companyIds: ['1441', '22'], timePosted: 'past_week' });
  });

  it('is a UsageError with code JOB_INVALID naming file and field', () => {
    const err = errorOf({ ...similar, rate: { requestsPerMinute: 0 } });
    expect(err).toBeInstanceOf(UsageError);
    expect(err.code).toBe('JOB_INVALID');
    expect(err.file).toBe('jobs/t.json');
    expect(err.message).toBe('jobs/t.json: rate.requestsPerMinute: must be a positive number');
  });

  it.each([
    [{ ...similar, pages: '2' }, 'jobs/t.json: pages: must be a number (got "2")'],
    [{ ...similar, pages: 1.5 }, 'jobs/t.json: pages: must be a whole number (got 1.5)'],
    [{ ...similar, pages: 0 }, 'jobs/t.json: pages: must be at least 1'],
    [{ ...similar, rate: { concurency: 2 } }, 'jobs/t.json: rate.concurency: unknown field (did you mean "concurrency"?)'],
    [{ ...similar, rate: { burst: 2 } }, 'jobs/t.json: rate.burst: unknown field; allowed here: requestsPerMinute, concurrency'],
    [{ ...similar, refreshAfterDay: 3 }, 'jobs/t.json: refreshAfterDay: unknown field (did you mean "refreshAfterDays"?)'],
    [{ ...similar, retry: { retries: -1 } }, 'jobs/t.json: retry.retries: must not be negative'],
    [{ ...similar, credits: { maxPerRun: 0 } }, 'jobs/t.json: credits.maxPerRun: must be a positive number'],
    [{ ...similar, refreshAfterDays: -1 }, 'jobs/t.json: refreshAfterDays: must not be negative'],
    [{ ...similar, input: { csv: 'x.csv' } }, 'jobs/t.json: input.column: is required'],
    [{ ...posts, input: { csv: 'x.csv', column: '  ' } }, 'jobs/t.json: input.column: must not be empty'],
    [{ ...similar, input: { csv: '', column: 'u' } }, 'jobs/t.json: input.csv: must not be empty'],
    [{ operation: 'similar-companies' }, 'jobs/t.json: input: is required'],
    [{ input: { csv: 'x' } }, 'jobs/t.json: operation: is required: one of "similar-companies", "post-details", "search-jobs"'],
    [{ ...similar, operation: 'lookalikes' }, 'jobs/t.json: operation: must be one of "similar-companies", "post-details", "search-jobs" (got "lookalikes")'],
    [[], 'jobs/t.json: the job definition must be an object (got a list)'],
    [{ ...similar, request: { page: 2 } }, 'jobs/t.json: request.page: not allowed here: set "pages" (page 1 to pages is fetched for every input)'],
    [{ ...similar, request: { account: { location: 'germany' } } }, 'jobs/t.json: request.account.location: must be a list (got "germany")'],
    [
      { ...similar, request: { account: { employeeSize: { range: [{ start: 50, end: 10 }] } } } },
      'jobs/t.json: request.account.employeeSize.range[0].end: must not be below start',
    ],
    [{ ...posts, pages: 2 }, 'jobs/t.json: pages: post-details has one result per post: leave "pages" out or set it to 1'],
    [{ ...posts, request: { num: 3 } }, 'jobs/t.json: request.num: unknown field; no field is allowed here'],
    // page and url are named in the schema only to say why they cannot be set: never suggested, never listed.
    [{ ...similar, request: { pages: 2 } }, 'jobs/t.json: request.pages: unknown field; allowed here: account, num'],
    [{ ...search, input: { csv: 'q.csv', column: 'keywords' } }, expect.stringContaining('jobs/t.json: input.column: not used by search-jobs')],
    [{ ...search, request: { start: 10 } }, expect.stringContaining('jobs/t.json: request.start: not allowed here')],
    [{ ...search, request: { companyIds: 'acme' } }, 'jobs/t.json: request.companyIds: company ids are numeric; got "acme"'],
    [{ ...search, request: { timePosted: 'yesterday' } }, expect.stringContaining('jobs/t.json: request.timePosted: unknown timePosted value "yesterday"; known values: "past_24hrs"')],
    [{ ...similar, retry: { minTimeoutMs: 5000, maxTimeoutMs: 100 } }, 'jobs/t.json: retry.minTimeoutMs: must not exceed retry.maxTimeoutMs (100)'],
    [{ ...similar, name: 'my job' }, expect.stringContaining('jobs/t.json: name: must start with a letter or digit')],
    // Values no job needs, each of which used to run out of memory, overflow a date or wait for ever.
    [{ ...similar, pages: 1e9 }, 'jobs/t.json: pages: must be at most 100'],
    [{ ...similar, refreshAfterDays: 1e308 }, 'jobs/t.json: refreshAfterDays: must be at most 36500'],
    [{ ...similar, keepRawDays: 1e308 }, 'jobs/t.json: keepRawDays: must be at most 36500'],
    [{ ...similar, rate: { requestsPerMinute: 1e-300 } }, 'jobs/t.json: rate.requestsPerMinute: must be at least 0.01'],
    [{ ...similar, rate: { requestsPerMinute: 1e308 } }, 'jobs/t.json: rate.requestsPerMinute: must be at most 1000000000'],
    [{ ...similar, rate: { concurrency: 1e9 } }, 'jobs/t.json: rate.concurrency: must be at most 1000'],
    [{ ...similar, request: { num: 1e9 } }, 'jobs/t.json: request.num: must be at most 1000'],
    [{ ...similar, retry: { retries: 1e9 } }, 'jobs/t.json: retry.retries: must be at most 100'],
    [{ ...similar, retry: { maxTimeoutMs: 1e12 } }, 'jobs/t.json: retry.maxTimeoutMs: must be at most 3600000'],
    [{ ...similar, retry: { maxUnusableAnswers: 1e12 } }, 'jobs/t.json: retry.maxUnusableAnswers: must be at most 1000000'],
    [{ ...similar, credits: { reserve: 1e308 } }, 'jobs/t.json: credits.reserve: must be at most 1000000000000'],
    [{ ...similar, credits: { maxPerRun: 1e308 } }, 'jobs/t.json: credits.maxPerRun: must be at most 1000000000000'],
    [
      { ...similar, request: { account: { employeeSize: { range: [{ start: 0, end: 1e10 }] } } } },
      'jobs/t.json: request.account.employeeSize.range[0].end: must be at most 1000000000',
    ],
  ])('rejects %j', (value, message) => {
    expect(errorOf(value).message).toEqual(message);
  });

  it('reports every bad field at once, one line each, with the path of each unknown field', () => {
    const err = errorOf({ ...similar, rate: { requestsPerMinute: -5 }, colour: 'red', request: { account: { size: 3 } } });
    expect(err.message.split('\n')).toEqual([
      'jobs/t.json: rate.requestsPerMinute: must be a positive number',
      'jobs/t.json: request.account.size: unknown field; allowed here: location, employeeSize',
      'jobs/t.json: colour: unknown field; allowed here: name, description, pages, rate, retry, credits, refreshAfterDays, keepRawDays, operation, input, request',
    ]);
    expect(err.issues.map((i) => i.field)).toEqual(['rate.requestsPerMinute', 'request.account.size', 'colour']);
  });

  it('names a misspelt key with the field it most likely means, next to what its absence breaks', () => {
    expect(errorOf({ opertion: 'post-details', input: posts.input }).message.split('\n')).toEqual([
      'jobs/t.json: operation: is required: one of "similar-companies", "post-details", "search-jobs"',
      'jobs/t.json: opertion: unknown field (did you mean "operation"?)',
    ]);
    expect(errorOf({ ...posts, input: { cvs: 'p.csv', column: 'post_url' } }).message.split('\n')).toEqual([
      'jobs/t.json: input.csv: is required',
      'jobs/t.json: input.cvs: unknown field (did you mean "csv"?)',
    ]);
  });

  it('points a group\'s field written at the top level to the group it goes inside', () => {
    expect(errorOf({ ...posts, retries: 3 }).message).toBe('jobs/t.json: retries: unknown field (did you mean "retry.retries"? it goes inside "retry")');
    expect(errorOf({ ...posts, max_per_run: 5 }).message).toBe('jobs/t.json: max_per_run: unknown field (did you mean "credits.maxPerRun"? it goes inside "credits")');
    expect(errorOf({ ...posts, concurency: 2 }).message).toBe('jobs/t.json: concurency: unknown field (did you mean "rate.concurrency"? it goes inside "rate")');
    expect(errorOf({ operation: 'post-details', column: 'post_url', input: { csv: 'p.csv' } }).message.split('\n')).toEqual([
      'jobs/t.json: input.column: is required',
      'jobs/t.json: column: unknown field (did you mean "input.column"? it goes inside "input")',
    ]);
    // The request's fields depend on the operation; spelt exactly, a group's field beats a loose match here (`num` ~ `name`).
    expect(errorOf({ ...similar, num: 5 }).message).toBe('jobs/t.json: num: unknown field (did you mean "request.num"? it goes inside "request")');
    expect(errorOf({ ...search, keywords: 'nurse' }).message).toBe('jobs/t.json: keywords: unknown field (did you mean "request.keywords"? it goes inside "request")');
    // A field of the group at hand is named as before; refused fields (request.url) are never suggested.
    expect(errorOf({ ...posts, retri: 3 }).message).toBe('jobs/t.json: retri: unknown field (did you mean "retry"?)');
    expect(errorOf({ ...posts, url: 'x' }).message).toEqual(expect.stringContaining('jobs/t.json: url: unknown field; allowed here: name,'));
  });

  it('still checks what every operation shares when the operation is missing or unknown', () => {
    const err = errorOf({ operation: 'post-detail', input: { cvs: 'p.csv' }, refresh_after_days: 3, rate: { concurrency: 0 }, request: { anything: 1 } });
    expect(err.message.split('\n')).toEqual([
      'jobs/t.json: operation: must be one of "similar-companies", "post-details", "search-jobs" (got "post-detail")',
      'jobs/t.json: rate.concurrency: must be at least 1',
      'jobs/t.json: input.csv: is required',
      'jobs/t.json: input.cvs: unknown field (did you mean "csv"?)',
      'jobs/t.json: refresh_after_days: unknown field (did you mean "refreshAfterDays"?)',
    ]);
  });

  it('rejects a file name that cannot be a job name unless the job names itself', () => {
    expect(() => resolveJob(similar, { ...ctx, defaultName: 'my leads' })).toThrow(/name: "my leads" \(taken from the file name\)/);
    expect(resolveJob({ ...similar, name: 'leads' }, { ...ctx, defaultName: 'my leads' }).name).toBe('leads');
  });

  it('defineJob returns its argument unchanged', () => {
    const def = { operation: 'post-details', input: { csv: 'p.csv', column: 'u' } } as const;
    expect(defineJob(def)).toBe(def);
  });
});
