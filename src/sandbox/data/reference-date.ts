/**
 * The fixed "today" of the synthetic data. Dates are relative to it, not to the clock, so the same request gets
 * the same answer on any day.
 */
export const REFERENCE_DATE_MS = Date.UTC(2025, 5, 30); // 2025-06-30T00:00:00Z

const DAY_MS = 86_400_000;

/** Midnight UTC `daysAgo` days before the reference date, in ms. */
export function daysBefore(daysAgo: number): number {
  return REFERENCE_DATE_MS - daysAgo * DAY_MS;
}

const pad2 = (n: number): string => String(n).padStart(2, '0');

/** `YYYY-MM-DD` of a UTC time. */
export function isoDate(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}`;
}

/** `DD-MM-YYYY` of a UTC time, the form of post timestamps. */
export function dayMonthYear(ms: number): string {
  const d = new Date(ms);
  return `${pad2(d.getUTCDate())}-${pad2(d.getUTCMonth() + 1)}-${d.getUTCFullYear()}`;
}
