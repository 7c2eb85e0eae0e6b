/** The report's top line and advice, read from `status`'s own figures so the page and `status --json` agree. */
import type { FullStatusReport } from '../runner/status-report.ts';
import type { RecentRun } from '../store/runs.ts';
import type { RunStatus } from '../store/tables.ts';
import { roundCredits } from '../credits/credit-meter.ts';

/**
 * What a person should do next, in one sentence, and how urgent: ok (nothing to do), warn (look at something), stop
 * (the next run will not do its work).
 */
interface Advice { action: string; level: 'ok' | 'warn' | 'stop' }

/** Why a run's remaining tasks were deferred, by its status. */
const DEFERRED_BECAUSE: Readonly<Record<string, string>> = {
  stopped_credits: 'the credits ran out (reserve, maxPerRun or the balance)',
  stopped_throttled: 'the service throttled the run (429) past the wait cap',
  stopped_unusable: "the service's paid answers could not be read",
  interrupted: 'the run was interrupted (a signal)',
  failed: 'the run stopped on an error',
  abandoned: 'the run died without finishing',
};

/** Each run status as the headline says it after "Run #61": a stored status with its underscores is no English. */
const STATUS_WORDS: Readonly<Record<RunStatus, string>> = {
  running: 'is still running',
  completed: 'completed',
  completed_with_failures: 'completed with failures',
  stopped_credits: 'stopped on credits',
  stopped_throttled: 'stopped on throttling (429)',
  stopped_unusable: 'stopped on unreadable answers',
  interrupted: 'was interrupted',
  failed: 'failed',
  abandoned: 'died without finishing',
};

/** A run's status as a verb for the headline; one this release does not know, as stored but readable. */
export const statusInWords = (status: string): string => STATUS_WORDS[status as RunStatus] ?? status.replaceAll('_', ' ');

/** A run as `status` lists it. */
type StatusRun = FullStatusReport['runs'][number];

/**
 * The headline of `status`, judging the last night (`lastNight`: the last run and the runs overlapping it, newest
 * first, report-figures' LAST_RUN_IDS) by its worst run: a worker that failed beside others that completed shows.
 */
export function headlineOf(status: FullStatusReport, lastNight: readonly RecentRun[]) {
  const night = nightOf(status, lastNight);
  const last = night.reduce<StatusRun | null>((worst, r) => (worst === null || severity(r) > severity(worst) ? r : worst), null);
  const creditsLeft = status.liveBalance
    ? { balance: status.liveBalance.balance, totalCredits: status.liveBalance.totalCredits, at: null, source: 'live' as const }
    : status.lastCounters
      ? { balance: status.lastCounters.balance, totalCredits: status.lastCounters.totalCredits, at: status.lastCounters.at, source: 'stored' as const }
      : null;
  const spent = night.flatMap((r) => (r.creditsSpent === null ? [] : [r.creditsSpent]));
  const deferred = deferredAfter(night);
  const base = {
    lastRun: last && { id: last.id, status: last.status, exitCode: last.exitCode, endedAt: last.endedAt, unfinished: last.unfinished },
    /** The runs of the last night, newest first: lastRun is the worst of them. */
    nightRunIds: night.map((r) => r.id),
    creditsSpentLastRun: spent.length === 0 ? null : roundCredits(spent.reduce((n, c) => n + c, 0)),
    creditsSpentAllRuns: status.creditsSpentAllRuns,
    /** The balance from the service's free check when it was asked, else the last counters stored. */
    creditsLeft,
    deferred: { tasks: deferred, why: deferred > 0 && last ? (DEFERRED_BECAUSE[last.status] ?? null) : null },
  };
  return { ...base, ...actionOf(last, night) };
}

/** How much a run asks of its reader: a stop (or a run gone unfinished, more) over a run going on, over one that finished. */
const SEVERITY: Readonly<Record<string, number>> = { completed: 0, completed_with_failures: 1, running: 2 };
const severity = (run: StatusRun) => (run.unfinished ? 4 : (SEVERITY[run.status] ?? 3));

/** The night's runs as `status` lists them (an open one measured); one past its list, as stored. */
function nightOf(status: FullStatusReport, lastNight: readonly RecentRun[]): StatusRun[] {
  const listed = new Map(status.runs.map((r) => [r.id, r]));
  const open = new Set(status.unfinishedRuns.map((r) => r.id));
  return lastNight.map((r) => listed.get(r.id) ?? { ...r, unfinished: open.has(r.id) });
}

/**
 * Tasks the night left deferred: for each set of jobs its runs worked, what the run that ended last left (a worker
 * counts the whole job, the others' answers included: summing the workers would count a task once per worker).
 */
function deferredAfter(night: readonly StatusRun[]): number {
  // By end, one still going last: the Map keeps the last run of each set of jobs.
  const endOf = (r: StatusRun) => r.endedAt ?? '\uffff';
  const byEnd = [...night].sort((a, b) => (endOf(a) < endOf(b) ? -1 : endOf(a) > endOf(b) ? 1 : 0));
  return [...new Map(byEnd.map((r) => [JSON.stringify(r.jobs), r.tasksDeferred])).values()].reduce((n, d) => n + d, 0);
}

/** What to do after a run that stopped for a reason of its own: one line per status that has one. */
const STOPPED_ADVICE: Readonly<Record<string, Advice>> = {
  stopped_credits: { level: 'stop', action: 'Top up credits (or raise credits.maxPerRun): the deferred tasks wait for the next run.' },
  stopped_throttled: { level: 'warn', action: 'Lower rate.requestsPerMinute to what your plan allows; the deferred tasks wait for the next run.' },
  stopped_unusable: { level: 'stop', action: 'The service answers in a shape this version cannot read: upgrade netingest, then run `netingest reprocess`.' },
};

function actionOf(last: StatusRun | null, night: readonly StatusRun[]): Advice {
  if (!last) return { level: 'warn', action: 'Nothing has run yet: start with `netingest run --all`.' };
  if (last.unfinished) return { level: 'stop', action: `Run ${last.id} stopped without finishing; the next run closes it and resumes its tasks.` };
  if (last.status === 'running') return { level: 'ok', action: `Run ${last.id} is still running.` };
  const stopped = STOPPED_ADVICE[last.status] ?? failedAdvice(last);
  if (stopped) return stopped;
  // Each worker of a night reads the same inputs: their invalid rows once.
  const invalid = Math.max(...night.map((r) => r.invalidRows));
  if (invalid > 0) return { level: 'warn', action: `Fix the ${invalid} invalid input row${invalid === 1 ? '' : 's'} listed below (file and line).` };
  if (last.status === 'completed_with_failures') return { level: 'warn', action: 'Look at the failures by error code below; retryable ones are tried again by the next run.' };
  return { level: 'ok', action: 'Nothing to do.' };
}

/** What to do after a run that failed or was cut short; null for one that finished. */
function failedAdvice(last: StatusRun): Advice | null {
  // By the code runs.error starts with: its text may say "token" of anything (JSON.parse's "Unexpected token '<'").
  if (last.status === 'failed' && /^AUTH\b/.test(last.error ?? '')) {
    return { level: 'stop', action: 'Fix the API token (the service refused it), then run again.' };
  }
  if (last.status === 'failed' || last.status === 'interrupted' || last.status === 'abandoned') {
    return { level: 'stop', action: `Read run ${last.id}'s error below (and the log); the next run resumes where it stopped.` };
  }
  return null;
}
