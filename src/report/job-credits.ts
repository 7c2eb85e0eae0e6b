/**
 * Each run's credits shared out to its jobs. A paid call is its task's job's (a lookup two jobs share is paid once, by
 * one), costing its counter's step over the run's previous one; the run's lowest call, whose cost no counter shows,
 * takes the rest of `runs.credits_spent`, so a night's jobs add up to what the run spent.
 */
import type { ReportData } from '../store/readers/report-figures.ts';
import { roundCredits } from '../credits/credit-meter.ts';

/** Credits one job spent in one run (`job` null: the run's spend that no job's call shows, see creditsByJob). */
export interface JobCredits { runId: number; job: string | null; paidAnswers: number; credits: number }

/** Below this, a difference is float noise of fractional costs. */
const NOISE = 1e-9;

/** Per run of `data.runs` with a spend, its credits per job, jobs in name order. */
export function creditsByJob(data: Pick<ReportData, 'runs' | 'creditSteps' | 'calls'>): JobCredits[] {
  const stepsByRun = byRun(data.creditSteps);
  const answeredByRun = byRun(data.calls);
  return data.runs.flatMap((run) => (run.creditsSpent === null ? [] : ofRun(run.id, run.creditsSpent, stepsByRun.get(run.id) ?? [], answeredByRun.get(run.id) ?? [])));
}

function ofRun(runId: number, spent: number, steps: ReportData['creditSteps'], calls: ReportData['calls']): JobCredits[] {
  const stepped = steps.reduce((n, s) => n + (s.steps ?? 0), 0);
  // On a shared account another worker's calls fall between this run's counters: its steps then hold more than
  // it spent, and are scaled down to the run's figure.
  const scale = stepped > spent && stepped > 0 ? spent / stepped : 1;
  const rest = Math.max(0, spent - stepped * scale);
  const byJob = new Map<string | null, JobCredits>();
  for (const s of steps) byJob.set(s.job, { runId, job: s.job, paidAnswers: s.paid, credits: (s.steps ?? 0) * scale });
  if (rest > NOISE) {
    const owner = restOwner(steps, calls);
    const row = byJob.get(owner) ?? { runId, job: owner, paidAnswers: 0, credits: 0 };
    row.credits += rest;
    byJob.set(owner, row);
  }
  return [...byJob.values()].map((r) => ({ ...r, credits: roundCredits(r.credits) })).sort((a, b) => (a.job ?? '\uffff').localeCompare(b.job ?? '\uffff'));
}

/**
 * Who takes the spend the steps do not show: the job of the run's lowest counter; with no counter read (every paid
 * answer unreadable, charged at an estimate), the job with the most answers.
 */
function restOwner(steps: ReportData['creditSteps'], calls: ReportData['calls']): string | null {
  const lowest = steps.find((s) => s.lowest > 0);
  if (lowest) return lowest.job;
  const most = calls.filter((c) => c.job !== null && c.answered > 0).sort((a, b) => b.answered - a.answered)[0];
  return most?.job ?? null;
}

function byRun<T extends { runId: number }>(items: readonly T[]): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const item of items) {
    if (!out.has(item.runId)) out.set(item.runId, []);
    out.get(item.runId)!.push(item);
  }
  return out;
}
