/** One figure of a benchmark: what was measured, its target, and its ratio to a baseline measured in the same run. */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  /** Human-readable target, e.g. ">= 0.5 of baseline" or "< 200 MB". */
  target: string;
  /** The baseline figure measured in the same run, when there is one. */
  baseline: number | null;
  /** value / baseline, when there is a baseline. */
  ratio: number | null;
  met: boolean;
}

/** Prints results as one aligned table. */
export function formatBenchTable(results: BenchResult[]): string {
  const rows = [
    ['benchmark', 'value', 'unit', 'baseline', 'ratio', 'target', 'met'],
    ...results.map((r) => [
      r.name,
      fmt(r.value),
      r.unit,
      r.baseline === null ? '-' : fmt(r.baseline),
      r.ratio === null ? '-' : r.ratio.toFixed(3),
      r.target,
      r.met ? 'yes' : 'NO',
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}

function fmt(n: number): string {
  return Math.abs(n) >= 1000 ? Math.round(n).toLocaleString('en-US') : String(Math.round(n * 1000) / 1000);
}
