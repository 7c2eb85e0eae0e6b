/**
 * When a stored answer is due again: after refreshAfterDays less a tolerance, since a run's answers arrive after it
 * started; without it, a nightly schedule would fetch them a night late.
 */

/** The tolerance, in one place. */
export const FRESHNESS_DEFAULTS = {
  /** Share of refreshAfterDays by which an answer may be younger and still be due (covers a long run). */
  toleranceFraction: 0.1,
  /** The tolerance at most, whatever refreshAfterDays (12 hours). */
  maxToleranceMs: 12 * 3_600_000,
} as const;

const DAY_MS = 86_400_000;

/** The ISO time before which a job's settled answers are due again, for a run starting at `nowMs`. */
export function freshSince(refreshAfterDays: number, nowMs: number = Date.now()): string {
  const ageMs = refreshAfterDays * DAY_MS;
  const toleranceMs = Math.min(ageMs * FRESHNESS_DEFAULTS.toleranceFraction, FRESHNESS_DEFAULTS.maxToleranceMs);
  return new Date(nowMs - ageMs + toleranceMs).toISOString();
}

/**
 * The cut-off of a run's due rule: under --refresh the run's start, so what the run settled stays settled; else
 * freshSince() `now` (the store's clock; by default this host's).
 */
export function dueSince(refreshAfterDays: number, refresh: boolean, startedAt: string, now?: string): string {
  return refresh ? startedAt : freshSince(refreshAfterDays, now === undefined ? Date.now() : Date.parse(now));
}
