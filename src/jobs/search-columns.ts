import type { CsvHeader } from '../input/csv-header.ts';
import { InputFileError } from '../input/input-error.ts';
import { nearestName } from '../near-name.ts';
import { SEARCH_QUERY_PARAMS, type SearchQueryParam } from './search-query.ts';

/**
 * Maps each search parameter to the column named like it (any case). A near miss of an unset parameter (`keyword`)
 * throws, as ignoring a typo would send paid searches without it; so do duplicates and no match.
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
  const misses = header.columns.flatMap((column) => {
    const near = column === '' || out.some(([, c]) => c === column) ? undefined : nearestName(column, unset);
    return near === undefined ? [] : [`column "${column}" is not a search parameter; did you mean "${near}"?`];
  });
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
