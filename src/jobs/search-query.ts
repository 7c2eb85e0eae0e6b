import type { CsvHeader } from '../input/csv-header.ts';
import { InputFileError } from '../input/input-error.ts';
import { nearestName } from '../near-name.ts';
import { SEARCH_JOBS_LIST_PARAMS, type SearchJobsQuery } from '../spec/types.ts';

/** search-jobs parameters a job's `request` or a CSV row may set (`start` is the planner's, from `pages`). */
export const SEARCH_QUERY_PARAMS = ['keywords', 'location', 'timePosted', 'experienceLevels', 'jobTypes', 'workplaceTypes', 'companyIds'] as const;
export type SearchQueryParam = (typeof SEARCH_QUERY_PARAMS)[number];

/** A search without its paging position: what one CSV row (plus the job's defaults) asks for. */
export type SearchQueryBase = Omit<SearchJobsQuery, 'start'>;

/** Values the service is known to accept, spelling forgiven: others are refused before a credit is spent. */
export const SEARCH_KNOWN_VALUES = {
  timePosted: ['past_24hrs', 'past_week', 'past_month'],
  experienceLevels: ['internship', 'entry level', 'associate', 'mid-senior level', 'director', 'executive'],
  jobTypes: ['full time', 'part time', 'contract', 'internship', 'temporary'],
  workplaceTypes: ['on site', 'remote', 'hybrid'],
} as const satisfies Partial<Record<SearchQueryParam, readonly string[]>>;

const LIST_PARAMS: ReadonlySet<string> = new Set(SEARCH_JOBS_LIST_PARAMS);

/** Known values by their loose spelling (lower case, letters and digits only). */
const KNOWN_BY_LOOSE = new Map<string, Map<string, string>>(
  Object.entries(SEARCH_KNOWN_VALUES).map(([param, values]) => [param, new Map(values.map((v) => [loose(v), v]))]),
);

/** Outcome of normalizing one parameter: its value (undefined when empty) or why it is refused. */
export type ParamResult = { ok: true; value: string | string[] | undefined } | { ok: false; reason: string };

/** True for parameters sent as comma-separated lists. */
export function isListParam(name: string): boolean {
  return LIST_PARAMS.has(name);
}

/** Normalizes one parameter from a CSV cell or `request`: lists split, known values spelt the service's way. */
export function normalizeParam(param: SearchQueryParam, raw: string | number | readonly (string | number)[]): ParamResult {
  if (!isListParam(param)) {
    const s = String(raw).trim();
    if (s === '') return { ok: true, value: undefined };
    return knownValue(param, s);
  }
  // A cell is split on commas or semicolons; items trimmed, empty ones dropped, order kept.
  const items = (Array.isArray(raw) ? raw.map(String) : String(raw).split(/[,;]/)).map((s) => s.trim()).filter((s) => s !== '');
  if (items.length === 0) return { ok: true, value: undefined };
  const out: string[] = [];
  for (const item of items) {
    if (param === 'companyIds' && !/^\d+$/.test(item)) return { ok: false, reason: `company ids are numeric; got "${item}"` };
    const r = knownValue(param, item);
    if (!r.ok) return r;
    out.push(r.value);
  }
  return { ok: true, value: out };
}

function knownValue(param: SearchQueryParam, value: string): { ok: true; value: string } | { ok: false; reason: string } {
  const known = KNOWN_BY_LOOSE.get(param);
  if (!known) return { ok: true, value };
  const match = known.get(loose(value));
  if (match !== undefined) return { ok: true, value: match };
  const list = [...known.values()].map((v) => `"${v}"`).join(', ');
  return { ok: false, reason: `unknown ${param} value "${value}"; known values: ${list}` };
}

function loose(value: string): string {
  return value.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** Each search parameter's column (its name, any case); a duplicate, no match or a near miss (`keyword`: paid searches would lack it) throws. */
export function searchColumns(file: string, header: CsvHeader): Array<[SearchQueryParam, string]> {
  const out: Array<[SearchQueryParam, string]> = [];
  for (const param of SEARCH_QUERY_PARAMS) {
    const matches = header.columns.filter((c) => c.toLowerCase() === param.toLowerCase());
    if (matches.length > 1) {
      throw new InputFileError(file, `line ${header.line}: columns ${matches.map((c) => `"${c}"`).join(' and ')} both name the search parameter ${param}`);
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
