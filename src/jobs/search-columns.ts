import type { CsvHeader } from '../input/csv-header.ts';
import { InputFileError } from '../input/input-error.ts';
import { SEARCH_QUERY_PARAMS, type SearchQueryParam } from './search-query.ts';

/** How far a column name may be from a parameter's and still count as a misspelling of it. */
export const NEAR_PARAM_MAX_EDITS = 2;

/**
 * Maps each search parameter to the CSV column named like it (case-insensitive). Other columns are allowed
 * (notes, owners), except one whose name is a near miss of a parameter no column sets (`keyword`, `job_types`,
 * `locaton`): that is almost surely a typo, and ignoring it would send paid searches without the parameter.
 * Throws InputFileError for a near miss, for two columns naming one parameter, and when no column names any.
 */
export function searchColumns(file: string, header: CsvHeader): Array<[SearchQueryParam, string]> {
  const out: Array<[SearchQueryParam, string]> = [];
  for (const param of SEARCH_QUERY_PARAMS) {
    const matches = header.columns.filter((c) => c.toLowerCase() === param.toLowerCase());
    if (matches.length > 1) {
      throw new InputFileError(file, `columns ${matches.map((c) => `"${c}"`).join(' and ')} both name the search parameter ${param}`);
    }
    if (matches[0] !== undefined) out.push([param, matches[0]]);
  }
  const unset = SEARCH_QUERY_PARAMS.filter((p) => !out.some(([param]) => param === p));
  const misses: string[] = [];
  for (const column of header.columns) {
    if (column === '' || out.some(([, c]) => c === column)) continue;
    const near = nearestParam(column, unset);
    if (near !== undefined) misses.push(`column "${column}" is not a search parameter; did you mean "${near}"?`);
  }
  if (misses.length > 0) {
    throw new InputFileError(
      file,
      `line ${header.line}: ${misses.join(' ')} (rename the column to the parameter's name or, if it holds ` +
        `something else, to a name less like one; the search parameters are: ${SEARCH_QUERY_PARAMS.join(', ')})`,
    );
  }
  if (out.length === 0) {
    const available = header.columns.filter((c) => c !== '').map((c) => `"${c}"`).join(', ');
    throw new InputFileError(
      file,
      `no column is named like a search parameter (${SEARCH_QUERY_PARAMS.join(', ')}); the header row (line ${header.line}) has: ${available}`,
    );
  }
  return out;
}

/** The parameter among `params` that `column` misspells (same letters but for case, `_`, `-`, spaces, or a few edits). */
export function nearestParam(column: string, params: readonly SearchQueryParam[]): SearchQueryParam | undefined {
  const name = squash(column);
  let best: SearchQueryParam | undefined;
  let bestEdits = NEAR_PARAM_MAX_EDITS + 1;
  for (const param of params) {
    const edits = editDistance(name, squash(param), bestEdits - 1);
    if (edits < bestEdits) {
      best = param;
      bestEdits = edits;
    }
  }
  return best;
}

function squash(name: string): string {
  return name.toLowerCase().replace(/[\s_-]/g, '');
}

/** Levenshtein distance of `a` and `b`, or `max + 1` as soon as it is known to exceed `max`. */
function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      row.push(d);
      rowMin = Math.min(rowMin, d);
    }
    if (rowMin > max) return max + 1;
    prev = row;
  }
  return prev[b.length]!;
}
