/** The data's fixed "today": dates are relative to it, not to the clock, so a request gets the same answer any day. */
export const REFERENCE_DATE_MS = Date.UTC(2025, 5, 30); // 2025-06-30T00:00:00Z

const DAY_MS = 86_400_000;

/** Midnight UTC `daysAgo` days before the reference date, in ms. */
export function daysBefore(daysAgo: number): number {
  return REFERENCE_DATE_MS - daysAgo * DAY_MS;
}

/** `YYYY-MM-DD` of a UTC time. */
export const isoDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** `DD-MM-YYYY` of a UTC time, the form of post timestamps. */
export const dayMonthYear = (ms: number): string => isoDate(ms).split('-').reverse().join('-');
