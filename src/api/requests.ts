/**
 * Builds each operation's request target and body exactly as api.md describes them. Pure functions, so the
 * encoding rules are tested without a server.
 */
import {
  OPERATION_PATHS,
  SEARCH_JOBS_LIST_PARAMS,
  SEARCH_JOBS_PARAMS,
  type SearchJobsQuery,
  type SimilarCompaniesRequest,
} from '../spec/types.ts';

const LIST_PARAMS: ReadonlySet<string> = new Set(SEARCH_JOBS_LIST_PARAMS);

/** Path of similar-companies (the request goes in the JSON body). */
export const SIMILAR_COMPANIES_PATH = OPERATION_PATHS['similar-companies'];

/** JSON body of similar-companies: the request as given (undefined members are dropped by JSON). */
export function similarCompaniesBody(body: SimilarCompaniesRequest): string {
  return JSON.stringify(body);
}

/** `/v1/api/post-details?url=<post URL percent-encoded>`. */
export function postDetailsPath(url: string): string {
  return `${OPERATION_PATHS['post-details']}?url=${encodeURIComponent(url)}`;
}

/**
 * `/v1/api/search-jobs?...`: parameters in the spec's order, values percent-encoded (spaces as %20), list
 * parameters' items encoded one by one and joined with a literal comma; absent, empty-string and empty-list
 * parameters (and empty list items) are left out.
 */
export function searchJobsPath(query: SearchJobsQuery): string {
  let qs = '';
  for (const name of SEARCH_JOBS_PARAMS) {
    const value: unknown = query[name];
    if (value === undefined || value === null) continue;
    let encoded: string;
    if (LIST_PARAMS.has(name)) {
      if (!Array.isArray(value)) throw new TypeError(`search-jobs parameter ${name} must be an array of strings`);
      encoded = value
        .filter((item) => item !== '' && item !== undefined && item !== null)
        .map((item) => encodeURIComponent(String(item)))
        .join(',');
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new TypeError(`search-jobs parameter ${name} must be a finite number`);
      encoded = String(value);
    } else {
      encoded = encodeURIComponent(String(value));
    }
    if (encoded === '') continue;
    qs += `${qs === '' ? '?' : '&'}${name}=${encoded}`;
  }
  return OPERATION_PATHS['search-jobs'] + qs;
}
