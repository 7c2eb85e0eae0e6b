/**
 * How `enrich` lays results out: one row per input (a lead list keeps a line per lead, its first `top` results in
 * numbered columns) or one per result. The column names are a public contract (docs/export.md).
 */
import type { Operation } from '../spec/types.ts';
import { specOf } from '../operations/index.ts';
import { UsageError } from '../errors.ts';

export const ENRICH_ROW_MODES = ['per-input', 'per-result'] as const;
export type EnrichRowMode = (typeof ENRICH_ROW_MODES)[number];

/** Bounds of `--top`: past a few dozen numbered groups a row is no longer readable in a spreadsheet. */
export const TOP_LIMITS = { min: 1, max: 100 } as const;

/** The result columns of the output, and the result part of each output row of one input. */
export interface ResultLayout {
  columns: string[];
  /** The result parts of an input's output rows: one per result, or one holding them all; [] when none. */
  rows(results: readonly unknown[][]): unknown[][];
  /** The result part of the one row of an input without results. */
  empty: unknown[];
}

/** The layout of `operation`'s results (`lookupColumns` in the order the lookup returns them). */
export function resultLayout(operation: Operation, lookupColumns: readonly string[], mode: EnrichRowMode, top: number): ResultLayout {
  // Null where an input has one result at most (a post): its columns are written as they are.
  const numbered = specOf(operation).enrich.numbered;
  if (mode === 'per-result' || numbered === null) {
    return { columns: [...lookupColumns], rows: (results) => [...results], empty: lookupColumns.map(() => null) };
  }
  const indexes = numbered.fields.map((f) => lookupColumns.indexOf(f));
  const prefix = numbered.count.replace(/count$/, '');
  const columns = [numbered.count];
  for (let i = 1; i <= top; i++) for (const f of numbered.fields) columns.push(`${prefix}${i}_${f.slice(prefix.length)}`);
  return {
    columns,
    rows(results) {
      if (results.length === 0) return [];
      const row: unknown[] = [results.length];
      for (let i = 0; i < top; i++) for (const at of indexes) row.push(results[i]?.[at] ?? null);
      return [row];
    },
    empty: columns.map(() => null),
  };
}

/** Refuses a `--top` that is not a whole number in TOP_LIMITS, or one given with one row per result. */
export function assertTop(top: number | undefined, mode: EnrichRowMode): void {
  if (top === undefined) return;
  if (mode === 'per-result') throw new UsageError('--top is for --rows per-input: with --rows per-result every result has its own row');
  if (!Number.isInteger(top) || top < TOP_LIMITS.min || top > TOP_LIMITS.max) {
    throw new UsageError(`--top must be a whole number from ${TOP_LIMITS.min} to ${TOP_LIMITS.max}, not ${top}`);
  }
}
