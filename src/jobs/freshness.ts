/**
 * When a stored answer is due again. An answer stays fresh for the job's refreshAfterDays less a tolerance:
 * a run's answers arrive over its whole length, after it started, so under a nightly schedule last week's
 * answers are a few minutes short of 7 days old when the run 7 nights later starts. Without the tolerance
 * they would be fetched a night late (every 8 nights for 7, every 3 for 2). A resume later the same night
 * still finds them fresh.
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
 * The cut-off of a run's due rule (store/ledger.ts): under --refresh the run's start, so that what the run itself
 * settled stays settled; otherwise freshSince() `now` (ISO: the store's clock, the server's on PostgreSQL; by
 * default this host's).
 */
export function dueSince(refreshAfterDays: number, refresh: boolean, startedAt: string, now?: string): string {
  return refresh ? startedAt : freshSince(refreshAfterDays, now === undefined ? Date.now() : Date.parse(now));
}
