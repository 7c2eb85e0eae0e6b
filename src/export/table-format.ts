/** The aligned table `netingest query` prints on a terminal: widths come from a sample of the first rows, so the table streams. */
import type { RowEncoder } from './row-encoders.ts';
import { displayWidth, fit, terminalValue } from '../text-width.ts';

/** Width limits of the table, in terminal cells, and their defaults. */
export const TABLE_DEFAULTS = {
  /** Widest a column may be. */
  maxColumnWidth: 40,
  /** Widest the whole table may be (the terminal's width when known). */
  maxTableWidth: 160,
  /** Narrowest a column is squeezed to when the table must shrink. */
  minColumnWidth: 4,
} as const;
export type TableLayoutOptions = { [K in keyof typeof TABLE_DEFAULTS]?: number };

const SEPARATOR = ' | ';

/** A table encoder whose column widths fit `sample` (the first rows). */
export function tableEncoder(columns: readonly string[], sample: readonly (readonly unknown[])[], options: TableLayoutOptions = {}): RowEncoder {
  const maxColumnWidth = options.maxColumnWidth ?? TABLE_DEFAULTS.maxColumnWidth;
  const maxTableWidth = options.maxTableWidth ?? TABLE_DEFAULTS.maxTableWidth;
  const minColumnWidth = options.minColumnWidth ?? TABLE_DEFAULTS.minColumnWidth;
  const widths = columns.map((name, i) => {
    const width = sample.reduce((w, row) => Math.max(w, displayWidth(cellText(row[i]))), displayWidth(cellText(name)));
    return Math.max(1, Math.min(width, maxColumnWidth));
  });
  fitWidths(widths, maxTableWidth - SEPARATOR.length * Math.max(0, columns.length - 1), minColumnWidth);
  const line = (cells: readonly unknown[], header: boolean) =>
    widths
      .map((width, i) => {
        const value = cells[i];
        const numeric = !header && (typeof value === 'number' || typeof value === 'bigint');
        // A number wider than the sampled ones overflows its column: a cut number would be a wrong number.
        const text = numeric ? cellText(value) : fit(cellText(value), width);
        const pad = ' '.repeat(Math.max(0, width - displayWidth(text)));
        return numeric ? pad + text : text + pad;
      })
      .join(SEPARATOR)
      .trimEnd() + '\n';
  return {
    header: () => line(columns, true) + widths.map((w) => '-'.repeat(w)).join('-+-') + '\n',
    encode(rows) {
      let out = '';
      for (const row of rows) out += line(row, false);
      return out;
    },
    footer: (rows) => `(${rows} row${rows === 1 ? '' : 's'})\n`,
  };
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Buffer.isBuffer(value)) return `<blob ${value.length} bytes>`;
  return terminalValue(String(value));
}

/** Shrinks the widest columns, one cell at a time, until the sum fits `budget` or none can shrink. */
function fitWidths(widths: number[], budget: number, minColumnWidth: number): void {
  for (let total = widths.reduce((a, b) => a + b, 0); total > budget; total--) {
    const widest = Math.max(...widths);
    if (widest <= minColumnWidth) return;
    widths[widths.indexOf(widest)]! -= 1;
  }
}
