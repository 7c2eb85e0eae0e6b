/**
 * The client with one typed wrapper per operation over its generic `call`, for the tests that call the API
 * directly: the runner only ever uses `call` with an operation's spec. Also each operation's request target and
 * body as its spec builds them, so the encoding rules are tested without a server.
 */
import { createApiClient, type ClientOptions } from '../../src/api/client.ts';
import type { ApiClient, ApiResult } from '../../src/api/types.ts';
import { postDetails, type PostDetailsAnswer } from '../../src/operations/post-details.ts';
import { searchJobs, searchJobsPath, type SearchJobsAnswer } from '../../src/operations/search-jobs.ts';
import { similarCompanies, type SimilarCompaniesAnswer, type SimilarCompaniesRequest } from '../../src/operations/similar-companies.ts';
import type { SearchJobsQuery } from '../../src/spec/types.ts';

export interface TypedClient extends ApiClient {
  /** POST /v1/api/similar-companies with `body` as JSON. */
  similarCompanies(body: SimilarCompaniesRequest): Promise<ApiResult<SimilarCompaniesAnswer>>;
  /** GET /v1/api/post-details?url=<percent-encoded post URL>. */
  postDetails(url: string): Promise<ApiResult<PostDetailsAnswer>>;
  /** GET /v1/api/search-jobs with the query's non-empty members as parameters (lists comma-joined). */
  searchJobs(query: SearchJobsQuery): Promise<ApiResult<SearchJobsAnswer>>;
}

/** createApiClient(options) with the typed wrappers. */
export function createTypedClient(options: ClientOptions): TypedClient {
  const client = createApiClient(options);
  return {
    ...client,
    similarCompanies: (body) => client.call(similarCompanies, body),
    postDetails: (url) => client.call(postDetails, { url }),
    searchJobs: (query) => client.call(searchJobs, query),
  };
}

/** JSON body of similar-companies: the request as given (undefined members are dropped by JSON). */
export function similarCompaniesBody(body: SimilarCompaniesRequest): string {
  return similarCompanies.send(body).body;
}

/** `/v1/api/post-details?url=<post URL percent-encoded>`. */
export function postDetailsPath(url: string): string {
  return postDetails.send({ url }).path;
}

export { searchJobsPath };
