/** A number as people read it: 999,415.5 (en-US grouping, at most 6 decimals; credits can be fractional). */
export function formatNumber(n: number): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: 6 });
}
