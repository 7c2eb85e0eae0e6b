/**
 * Text from the API (an answer's member names, error excerpts) or the database reaches the terminal and cron's log
 * with its control characters blanked, as `query`'s table does (text-width.ts): an ESC or C1 sequence could clear the
 * screen, recolour it or set the window title. JSON lines escape them, and keep the value.
 */
import { describe, expect, it } from 'vitest';
import { formatRunSummary } from '../../src/cli/format-summary.ts';
import { driftPathLines, type DriftLine } from '../../src/operations/drift.ts';
import { createLogger } from '../../src/runner/logger.ts';
import { formatPlanReport, type PlanReport } from '../../src/runner/plan-report.ts';
import { rejectedLines, type ReprocessReport } from '../../src/runner/reprocess.ts';
import type { RunSummary } from '../../src/runner/run-summary.ts';
import { formatStatus, formatStatusDrift, type FullStatusReport } from '../../src/runner/status-report.ts';

/** The hostile member name of the defect: clear screen, red, window title, BEL; and an 8-bit CSI (C1). */
const HOSTILE = '\u001b[2J\u001b[31mRED\u001b]0;PWNED\u0007\u009b0m_url';
/** As printed: each control a space, the rest as sent. */
const SHOWN = ' [2J [31mRED ]0;PWNED  0m_url';
/** Any control a terminal acts on: C0 but tab and line feed, DEL, C1. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

const drift: DriftLine[] = [
  { operation: 'post-details', path: 'author.network_url', kind: 'renamed', count: 2, of: 2, detail: `author.${HOSTILE}`, message: '' },
  { operation: 'post-details', path: `author.${HOSTILE}\nforged`, kind: 'type', count: 1, of: 2, detail: 'number read as text', message: '' },
];

function summary(): RunSummary {
  return {
    runId: 3, status: 'completed_with_failures', startedAt: '2026-11-02T08:00:00.000Z', endedAt: '2026-11-02T08:01:00.000Z', jobs: [],
    calls: 2, creditsSpent: 2, creditsRemaining: 998, creditsEstimatedAnswers: 0, creditsSpentEstimated: false,
    error: { code: 'API_SCHEMA', message: `the answer's member ${HOSTILE} is wrong` }, stop: null, drift, notRecorded: null,
  };
}

function status(): FullStatusReport {
  const rows = drift.map(({ operation, path, kind, count, of, detail }) => ({ operation, path, kind, count, seen: of, detail }));
  return {
    lock: null, unfinishedRuns: [], runs: [], tasksByJob: { [`posts${HOSTILE}`]: { done: 2 } }, wrongShapeBodiesKept: 0,
    drift: { runId: 3, rows }, creditsSpentAllRuns: 2, creditsUncountedBetweenRuns: 0, lastCounters: null, lastReport: null, liveBalance: null,
  } as unknown as FullStatusReport;
}

/** A logger of `format` writing into an array. */
function capture(format: 'text' | 'json') {
  const lines: string[] = [];
  const stream = { write: (s: string) => (lines.push(s), true) } as unknown as NodeJS.WritableStream;
  return { lines, logger: createLogger({ stream, format }) };
}

describe('API text on the terminal and in the log', () => {
  it('drift lines: member names with ESC, BEL and C1 shown blanked, a line break inside a path as ↵', () => {
    expect(driftPathLines(drift)).toEqual([
      `post-details author.network_url: missing in 2/2, read from author.${SHOWN}`,
      `post-details author.${SHOWN}↵forged: of another type in 1/2 (number read as text), stored as NULL`,
    ]);
  });

  it("the run's summary and status (with --drift) hold no control character, the names otherwise as sent", () => {
    for (const text of [formatRunSummary(summary()), formatStatus(status()), formatStatusDrift(status())]) {
      expect(text).not.toMatch(CONTROL);
      expect(text).toContain(`author.${SHOWN}`);
    }
    expect(formatRunSummary(summary())).toContain(`  error: the answer's member ${SHOWN} is wrong [API_SCHEMA]`);
    expect(formatStatus(status())).toContain(`  posts${SHOWN}: done 2`);
  });

  it('text log lines: message and fields blanked (a blanked value quoted), one line each', () => {
    const { lines, logger } = capture('text');
    logger.warn(`answer drift: ${HOSTILE}`, { error: HOSTILE, detail: `a${HOSTILE}\nb` });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(CONTROL);
    expect(lines[0]!.trimEnd().split('\n')).toHaveLength(1);
    expect(lines[0]).toContain(`answer drift: ${SHOWN} error=${JSON.stringify(SHOWN)} detail=${JSON.stringify(`a${SHOWN}\nb`)}`);
  });

  it('JSON log lines: every control escaped (C1 and DEL too), the values read back as sent', () => {
    const { lines, logger } = capture('json');
    logger.warn(HOSTILE, { error: `${HOSTILE}\u007f` });
    expect(lines[0]).not.toMatch(CONTROL);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: HOSTILE, error: `${HOSTILE}\u007f` });
  });

  it("reprocess's stderr lines and plan's invalid rows: blanked", () => {
    const report = { rejected: [{ id: 7, operation: 'post-details', requestKey: 'k', taskId: 1, errorCode: null, reason: `not JSON: ${HOSTILE}` }] };
    expect(rejectedLines(report as unknown as ReprocessReport)).toEqual([`raw response 7 (post-details k, task 1) skipped: not JSON: ${SHOWN}`]);
    const plan = {
      job: 'posts', operation: 'post-details', tasks: 0, invalidRows: 1, duplicates: 0, fresh: 0, failedBefore: 0, calls: 0, costPerCall: 1,
      costLearned: true, estimatedCredits: 0, estimatedCreditsRange: null, lastKnownBalance: null, liveBalance: null,
      invalidSamples: [{ file: 'posts.csv', line: 2, field: 'post_url', reason: `not a URL: ${HOSTILE}` }], extraFields: { rows: 0, firstLine: null },
    } satisfies PlanReport;
    const text = formatPlanReport(plan, 0);
    expect(text).not.toMatch(CONTROL);
    expect(text).toContain(`  invalid: posts.csv:2 (post_url): not a URL: ${SHOWN}`);
  });
});
