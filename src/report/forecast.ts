/** What the next runs will cost: tasks by the day the plan's rule makes them due, at the cost per call learned. */
import type { TaskAge } from '../store/readers/report-figures.ts';
import { roundCredits } from '../credits/credit-meter.ts';
import type { FigureOptions } from './figures.ts';

type ForecastOptions = Pick<FigureOptions, 'forecastDays' | 'now'> & {
  /** Each operation's refresh age (days) when its job does not say. */
  refreshAfterDays: Readonly<Record<string, number>>;
  costPerCall: (operation: string) => number;
};

const MS_PER_DAY = 86_400_000;

/** Tasks of each job coming due each day (UTC), by day then job, days with none left out; day 0 holds those due already. */
export function forecastDue(ages: readonly TaskAge[], options: ForecastOptions) {
  const today = Date.UTC(options.now.getUTCFullYear(), options.now.getUTCMonth(), options.now.getUTCDate());
  const byKey = new Map<string, { day: string; job: string; tasks: number; credits: number }>();
  for (const age of ages) {
    const due = dueAt(age, options);
    if (due === null) continue;
    const index = Math.max(0, Math.floor((due - today) / MS_PER_DAY));
    if (index >= options.forecastDays) continue;
    const day = new Date(today + index * MS_PER_DAY).toISOString().slice(0, 10);
    const key = `${day}\u0000${age.job}`;
    const entry = byKey.get(key) ?? { day, job: age.job, tasks: 0, credits: 0 };
    entry.tasks += age.n;
    entry.credits = roundCredits(entry.credits + age.n * options.costPerCall(age.operation));
    byKey.set(key, entry);
  }
  return [...byKey.values()].sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : a.job < b.job ? -1 : a.job > b.job ? 1 : 0));
}

/** When a task is due (ms), or null when no run takes it again without --refresh. */
function dueAt(age: TaskAge, options: ForecastOptions): number | null {
  const now = options.now.getTime();
  if (age.status === 'pending' || age.status === 'deferred') return now;
  if (age.status === 'failed') return age.retryable === 1 ? now : null;
  if (age.completedHour === null) return now;
  const refreshDays = options.refreshAfterDays[age.operation] ?? 0;
  return Date.parse(`${age.completedHour}:00:00Z`) + refreshDays * MS_PER_DAY;
}
