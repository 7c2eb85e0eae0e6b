/** The report's top line and advice, read from `status`'s own figures so the page and `status --json` agree. */
import type { FullStatusReport } from '../runner/status-report.ts';

/** What to do next, and how urgent it is. */
interface Advice {
  /** What a person should do next, in one sentence. */
  action: string;
  /** How urgent: ok (nothing to do), warn (look at something), stop (the next run will not do its work). */
  level: 'ok' | 'warn' | 'stop';
}

/** Why a run's remaining tasks were deferred, by its status. */
const DEFERRED_BECAUSE: Readonly<Record<string, string>> = {
  stopped_credits: 'the credits ran out (reserve, maxPerRun or the balance)',
  stopped_throttled: 'the service throttled the run (429) past the wait cap',
  stopped_unusable: "the service's paid answers could not be read",
  interrupted: 'the run was interrupted (a signal)',
  failed: 'the run stopped on an error',
  abandoned: 'the run died without finishing',
};

/** The headline of `status`, with the window's runs oldest first (figures.ts's nights: the last one's invalid rows). */
export function headlineOf(status: FullStatusReport, nights: ReadonlyArray<{ invalidRows: number }>) {
  const last = status.runs[0] ?? null;
  const creditsLeft = status.liveBalance
    ? { balance: status.liveBalance.balance, totalCredits: status.liveBalance.totalCredits, at: null, source: 'live' as const }
    : status.lastCounters
      ? { balance: status.lastCounters.balance, totalCredits: status.lastCounters.totalCredits, at: status.lastCounters.at, source: 'stored' as const }
      : null;
  const deferred = last?.tasksDeferred ?? 0;
  const base = {
    lastRun: last && { id: last.id, status: last.status, exitCode: last.exitCode, endedAt: last.endedAt, unfinished: last.unfinished },
    creditsSpentLastRun: last?.creditsSpent ?? null,
    creditsSpentAllRuns: status.creditsSpentAllRuns,
    /** The balance from the service's free check when it was asked, else the last counters stored. */
    creditsLeft,
    deferred: { tasks: deferred, why: deferred > 0 && last ? (DEFERRED_BECAUSE[last.status] ?? null) : null },
  };
  return { ...base, ...actionOf(status, nights) };
}

/** What to do after a run that stopped for a reason of its own: one line per status that has one. */
const STOPPED_ADVICE: Readonly<Record<string, Advice>> = {
  stopped_credits: { level: 'stop', action: 'Top up credits (or raise credits.maxPerRun): the deferred tasks wait for the next run.' },
  stopped_throttled: { level: 'warn', action: 'Lower rate.requestsPerMinute to what your plan allows; the deferred tasks wait for the next run.' },
  stopped_unusable: { level: 'stop', action: 'The service answers in a shape this version cannot read: upgrade netingest, then run `netingest reprocess`.' },
};

function actionOf(status: FullStatusReport, nights: ReadonlyArray<{ invalidRows: number }>): Advice {
  const last = status.runs[0];
  if (!last) return { level: 'warn', action: 'Nothing has run yet: start with `netingest run --all`.' };
  if (last.unfinished) return { level: 'stop', action: `Run ${last.id} stopped without finishing; the next run closes it and resumes its tasks.` };
  if (last.status === 'running') return { level: 'ok', action: `Run ${last.id} is still running.` };
  const stopped = STOPPED_ADVICE[last.status] ?? failedAdvice(last);
  if (stopped) return stopped;
  const invalid = nights.at(-1)?.invalidRows ?? last.invalidRows;
  if (invalid > 0) return { level: 'warn', action: `Fix the ${invalid} invalid input row${invalid === 1 ? '' : 's'} listed below (file and line).` };
  if (last.status === 'completed_with_failures') return { level: 'warn', action: 'Look at the failures by error code below; retryable ones are tried again by the next run.' };
  return { level: 'ok', action: 'Nothing to do.' };
}

/** What to do after a run that failed or was cut short; null for one that finished. */
function failedAdvice(last: FullStatusReport['runs'][number]): Advice | null {
  if (last.status === 'failed' && /\b(401|403|AUTH|token)\b/i.test(last.error ?? '')) {
    return { level: 'stop', action: 'Fix the API token (the service refused it), then run again.' };
  }
  if (last.status === 'failed' || last.status === 'interrupted' || last.status === 'abandoned') {
    return { level: 'stop', action: `Read run ${last.id}'s error below (and the log); the next run resumes where it stopped.` };
  }
  return null;
}
