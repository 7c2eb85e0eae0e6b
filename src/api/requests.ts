/**
 * Each operation's request target and body, as its spec builds them (src/operations/): pure functions, so the
 * encoding rules are tested without a server.
 */
import { postDetails } from '../operations/post-details.ts';
import { searchJobsPath as searchJobsPathOf } from '../operations/search-jobs.ts';
import { similarCompanies } from '../operations/similar-companies.ts';
import type { SearchJobsQuery, SimilarCompaniesRequest } from '../spec/types.ts';

/** Path of similar-companies (the request goes in the JSON body). */
export const SIMILAR_COMPANIES_PATH = similarCompanies.path;

/** JSON body of similar-companies: the request as given (undefined members are dropped by JSON). */
export function similarCompaniesBody(body: SimilarCompaniesRequest): string {
  return similarCompanies.send(body).body;
}

/** `/v1/api/post-details?url=<post URL percent-encoded>`. */
export function postDetailsPath(url: string): string {
  return postDetails.send({ url }).path;
}

/** `/v1/api/search-jobs?...` (see searchJobsPath in operations/search-jobs.ts). */
export function searchJobsPath(query: SearchJobsQuery): string {
  return searchJobsPathOf(query);
}
