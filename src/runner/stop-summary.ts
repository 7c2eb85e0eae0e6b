import type { CreditStop, CreditStopReason } from '../credits/credit-guard.ts';
import type { StopReason } from './run-stop.ts';
import { plural } from '../plural.ts';
import { roundCredits } from '../credits/credit-meter.ts';

/** Why a run stopped before its work was done, as the summary (`stop` in --json), the log and `runs.error` say it. */
export interface RunStopSummary {
  reason: StopReason;
  /** For a credit stop: which limit stopped it (`reserve`, `max-per-run`, or `out-of-credits` for a 402). */
  limit: CreditStopReason | null;
  /** One sentence naming the cause, e.g. "credits.reserve: the balance (8) minus ...". */
  message: string;
}

export interface StopFacts {
  reason: StopReason;
  /** Message of the error behind the stop, if any (auth, outage, fatal, a 402). */
  errorMessage: string | null;
  credit: CreditStop | null;
  /** The job whose own credits.maxPerRun stopped it while the run went on, if that is the stop. */
  cappedJob?: string | null;
  throttledMs: number;
  maxThrottleWaitMs: number;
  /** The cap on 429s per task; a throttle stop under the wait cap was this one's. */
  maxThrottledAttemptsPerTask?: number;
  /** Calls the run made: an interrupt before the first is told as such. */
  calls?: number;
}

/** The stop's reason and one sentence that names its cause: the limit and its figures, or the error. */
export function describeStop(facts: StopFacts): RunStopSummary {
  const { reason } = facts;
  if (reason === 'credits') {
    const { credit: c, cappedJob = null } = facts;
    const limit = c?.reason ?? 'out-of-credits';
    if (limit === 'reserve') return { reason, limit, message: reserveMessage(c) };
    if (limit === 'max-per-run') return { reason, limit, message: capMessage(c, cappedJob) };
    return { reason, limit, message: 'the API answered 402: the account has no credits left for the next call; top up the account' };
  }
  if (reason === 'throttled') {
    const perTask = facts.throttledMs <= facts.maxThrottleWaitMs && facts.maxThrottledAttemptsPerTask;
    const cap = perTask
      ? `one task ${perTask} times in this run, the cap of throttled attempts per task (waited ${seconds(facts.throttledMs)} s in all)`
      : `the run for ${seconds(facts.throttledMs)} s in all, over the wait cap of ${seconds(facts.maxThrottleWaitMs)} s`;
    return { reason, limit: null, message: `the API throttled (429) ${cap}; the remaining tasks are deferred to the next run` };
  }
  if (reason === 'interrupted') {
    const told = facts.calls === 0 ? " before the run's first call: no call was made" : ': any calls in flight were finished and written';
    return { reason, limit: null, message: `interrupted by a signal${told}, the remaining tasks are deferred` };
  }
  return { reason, limit: null, message: facts.errorMessage ?? 'stopped by an error' };
}

function reserveMessage(c: CreditStop | null): string {
  const fix = 'top up the account or lower credits.reserve (--reserve)';
  if (c?.balance == null) return `credits.reserve: the next call could take the balance below the reserve; ${fix}`;
  if (c.lastKnownAt !== undefined) return lastKnownMessage(c, c.balance, c.lastKnownAt);
  const balance = roundCredits(c.balance);
  // With no reserve, "below the reserve of 0" only meant that the balance cannot pay.
  if (c.reserve === 0) return `credits: the balance (${balance}) cannot pay for ${nextCall(c)}; top up the account`;
  if (c.balance < c.reserve) return `credits.reserve: the balance (${balance}) is below the reserve of ${c.reserve}; ${fix}`;
  return `credits.reserve: the balance (${balance}) minus ${nextCall(c)} would fall below the reserve of ${c.reserve}; ${fix}`;
}

/** A stop on the last balance stored: no free check shows a top-up, so the way past it is one run allowed to call. */
function lastKnownMessage(c: CreditStop, balance: number, at: string): string {
  const last = `the last known balance (${roundCredits(balance)}, read at ${at})`;
  const why = balance < c.reserve ? `is below the reserve of ${c.reserve}` : `minus ${nextCall(c)} would fall below the reserve of ${c.reserve}`;
  return (
    `credits.reserve: ${last} ${why}; the service offers no free balance check, so a top-up cannot be seen before a paid call: ` +
    'after topping up, one run with --reserve 0 shows the new balance'
  );
}

function capMessage(c: CreditStop | null, cappedJob: string | null): string {
  const spent = `${roundCredits(c?.spent ?? 0)} of its cap of ${c?.maxPerRun ?? '?'}`;
  if (cappedJob !== null) {
    return (
      `credits.maxPerRun of job ${cappedJob}: the run had spent ${spent} and ${nextCall(c)} would go over it; ` +
      'its remaining tasks are deferred to the next run (or raise credits.maxPerRun, --max-credits)'
    );
  }
  return `credits.maxPerRun: the run spent ${spent} and ${nextCall(c)} would go over it; the next run goes on (or raise credits.maxPerRun, --max-credits)`;
}

/** The next call and its cost; an assumed one says so: "about 5 credits" reads as fact for a call that may cost 1. */
function nextCall(c: CreditStop | null): string {
  if (c?.cost == null) return 'the next call';
  const cost = plural(roundCredits(c.cost), 'credit');
  return c.costAssumed ? `the next call (assumed ${cost} until an answer shows the cost)` : `the next call (about ${cost})`;
}

function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}
