/** One formatter for the whole page: toLocaleString() with options builds a new one per call, a second per year. */
const FORMAT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 6 });

/** A number as people read it: 999,415.5 (en-US grouping, at most 6 decimals; credits can be fractional). */
export function formatNumber(n: number): string {
  return FORMAT.format(n);
}
