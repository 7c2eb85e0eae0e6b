/** The report's pure parts: what a sample hides, the forecast's due rule day by day, the headline's advice. */
import { describe, expect, it } from 'vitest';
import { creditsByJob, forecastDue, redactSample, SAMPLE_MAX_CHARS } from '../../src/report/figures.ts';
import type { ReportData } from '../../src/store/readers/report-figures.ts';
import { headlineOf, statusInWords } from '../../src/report/headline.ts';
import { RUN_STATUSES } from '../../src/store/tables.ts';
import { escapeHtml } from '../../src/report/page.ts';
import type { FullStatusReport } from '../../src/runner/status-report.ts';

describe('redactSample', () => {
  it('masks bearer tokens, secret parameters and URL passwords, and shortens', () => {
    const out = redactSample('401: Authorization: Bearer abc.DEF-123 at https://api.x/v1?token=s3cr3t&x=1 db postgres://ops:hunter2@db:5432/n');
    expect(out).not.toMatch(/abc\.DEF-123|s3cr3t|hunter2/);
    expect(out).toContain('Bearer [REDACTED]');
    expect(out).toContain('postgres://ops:[REDACTED]@db');
    expect(redactSample('x'.repeat(500))).toHaveLength(SAMPLE_MAX_CHARS);
  });
});

describe('escapeHtml', () => {
  it('leaves no markup character', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&</a>`)).not.toMatch(/[<>"']|&(?!#\d+;)/);
  });
});

describe('forecastDue', () => {
  const now = new Date('2026-06-30T06:00:00Z');
  const options = { forecastDays: 3, refreshAfterDays: { 'post-details': 7 }, costPerCall: () => 2, now };
  const age = (status: string, completedHour: string | null, n = 1, retryable: number | null = null) => ({ job: 'p', operation: 'post-details', status, retryable, completedHour, n });

  it('puts pending, deferred and retryable failures today, answers when they get older than the refresh age, and leaves out failures for good', () => {
    const days = forecastDue(
      [age('pending', null, 3), age('deferred', null), age('failed', null, 4, 1), age('failed', null, 5, 0), age('done', '2026-06-24T10', 2), age('done', '2026-06-29T10', 9), age('not_found', '2026-06-10T00')],
      options,
    );
    expect(days).toEqual([
      // 3 pending + 1 deferred + 4 retryable at 2 each, + 1 not found long ago, called again for free (404s are free)
      { day: '2026-06-30', job: 'p', tasks: 9, credits: 16 },
      { day: '2026-07-01', job: 'p', tasks: 2, credits: 4 },
    ]);
  });

  it('counts a task again each time its refresh age passes in the window, once a day', () => {
    const week = { ...options, forecastDays: 7, refreshAfterDays: { 'search-jobs': 0.5, 'post-details': 2 } };
    const of = (operation: string, status: string, completedHour: string | null) => ({ job: operation, operation, status, retryable: null, completedHour, n: 3 });
    const days = forecastDue([of('search-jobs', 'done', '2026-06-30T02'), of('post-details', 'pending', null), of('post-details', 'not_found', '2026-06-29T10')], week);
    // Every 12 hours: due at 14:00 today, then each day (a nightly run takes it once a day), 3 tasks at 2.
    expect(days.filter((d) => d.job === 'search-jobs').map((d) => [d.day.slice(5), d.credits])).toEqual(
      ['06-30', '07-01', '07-02', '07-03', '07-04', '07-05', '07-06'].map((day) => [day, 6]),
    );
    // Every 2 days: the pending ones now and each second day after; the not-found ones (due 07-01) at no cost.
    expect(days.filter((d) => d.job === 'post-details').map((d) => [d.day.slice(5), d.tasks, d.credits])).toEqual([
      ['06-30', 3, 6], ['07-01', 3, 0], ['07-02', 3, 6], ['07-03', 3, 0], ['07-04', 3, 6], ['07-05', 3, 0], ['07-06', 3, 6],
    ]);
  });
});

describe('statusInWords', () => {
  it('says every stored run status as English', () => {
    expect(statusInWords('stopped_credits')).toBe('stopped on credits');
    for (const status of RUN_STATUSES) expect(statusInWords(status), status).toMatch(/^[a-z]+( [a-z0-9()]+)*$/);
    expect(new Set(RUN_STATUSES.map(statusInWords)).size).toBe(RUN_STATUSES.length);
  });
});

describe('creditsByJob', () => {
  const of = (creditsSpent: number, steps: Array<[job: string, paid: number, steps: number]>) => creditsByJob({
    runs: [{ id: 1, creditsSpent } as ReportData['runs'][number]],
    creditSteps: steps.map(([job, paid, stepped], i) => ({ runId: 1, job, paid, steps: stepped, lowest: i === 0 ? 1 : 0 })),
    calls: [],
  }).map((c) => [c.job, c.credits]);

  it("splits a run on a shared account in whole credits that add up to its spend", () => {
    // Another worker's calls fell between this run's counters: its steps (7 + 5) hold more than the 10 it spent.
    expect(of(10, [['a', 4, 7], ['b', 3, 5]])).toEqual([['a', 6], ['b', 4]]);
    // Equal shares of 2 among three: the unit left over goes to the first names.
    expect(of(2, [['a', 1, 1], ['b', 1, 1], ['c', 1, 1]])).toEqual([['a', 1], ['b', 1], ['c', 0]]);
    // Where the service charges fractions, in the run's finest decimal.
    expect(of(2.5, [['a', 8, 2], ['b', 4, 1]])).toEqual([['a', 1.7], ['b', 0.8]]);
    // A run alone on its account keeps its jobs' own steps, the rest to its lowest call's job.
    expect(of(12, [['a', 4, 7], ['b', 3, 4]])).toEqual([['a', 8], ['b', 4]]);
  });
});

describe('headlineOf', () => {
  const status = (run: Partial<FullStatusReport['runs'][number]>): FullStatusReport =>
    ({
      runs: [{ id: 7, status: 'completed', exitCode: 0, endedAt: 'e', creditsSpent: 3, tasksDeferred: 0, invalidRows: 0, error: null, unfinished: false, ...run }],
      unfinishedRuns: [], creditsSpentAllRuns: 10, lastCounters: { balance: 5, totalCredits: 100, at: 't', creditsUsed: 95, creditsRemaining: 5 }, liveBalance: null,
    }) as unknown as FullStatusReport;

  // A night of that one run.
  const headline = (run: Partial<FullStatusReport['runs'][number]>) => {
    const s = status(run);
    return headlineOf(s, s.runs);
  };

  it('says to top up when the credits ran out, naming why tasks were deferred', () => {
    const h = headline({ status: 'stopped_credits', exitCode: 3, tasksDeferred: 40 });
    expect(h.level).toBe('stop');
    expect(h.action).toMatch(/Top up credits/);
    expect(h.deferred).toEqual({ tasks: 40, why: 'the credits ran out (reserve, maxPerRun or the balance)' });
    expect(h.creditsLeft).toEqual({ balance: 5, totalCredits: 100, at: 't', source: 'stored' });
  });

  it('says to fix the token when the service refused it, and nothing to do after a clean run', () => {
    expect(headline({ status: 'failed', exitCode: 1, error: 'AUTH: HTTP 401 from the API' }).action).toMatch(/Fix the API token/);
    expect(headline({})).toMatchObject({ level: 'ok', action: 'Nothing to do.' });
  });

  it('does not blame the token for an HTML page in place of JSON, whose parse error says "token"', () => {
    const error = `API_UNAVAILABLE: the API answers with something that is not JSON: the 200 response body is not valid JSON (Unexpected token '<', "<html><bod"... is not valid JSON) [INVALID_JSON]; 3 tasks in a row failed`;
    expect(headline({ status: 'failed', exitCode: 1, error }).action).toBe("Read run 7's error below (and the log); the next run resumes where it stopped.");
  });
});
