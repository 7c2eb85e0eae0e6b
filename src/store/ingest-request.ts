/**
 * What the normalizers need to know about the request behind a response: the 200 bodies do not say which
 * company, post or query they answer, so the runner passes it along (and raw_responses stores it, so that
 * `reprocess` can replay a body without the ledger).
 */
import type { Operation, SearchJobsQuery, SimilarCompaniesAccount } from '../spec/types.ts';
import type { AnswerByOperation } from '../operations/answers.ts';

/** A similar-companies page: the reference company, its filter set and the page asked for. */
export interface SimilarCompaniesIngestRequest {
  operation: 'similar-companies';
  /** Canonical company URL of the company asked about. */
  referenceUrl: string;
  /** Stable key of the filter set (the caller's choice, e.g. a hash of `filters`). */
  filterKey: string;
  filters: SimilarCompaniesAccount;
  /** 1-based page number sent. */
  page: number;
  /** Page size sent. */
  num: number;
}

/** A post lookup. */
export interface PostDetailsIngestRequest {
  operation: 'post-details';
  /** Canonical post URL asked for. */
  postUrl: string;
}

/** A search-jobs page. */
export interface SearchJobsIngestRequest {
  operation: 'search-jobs';
  /** Stable key of the query (the caller's choice), one job_searches row each. */
  searchKey: string;
  query: Omit<SearchJobsQuery, 'start'>;
  /** Record offset sent; result i is stored at position start + i. */
  start: number;
}

/** The request a response answers. */
export type IngestRequest = SimilarCompaniesIngestRequest | PostDetailsIngestRequest | SearchJobsIngestRequest;

/** The 200 body of each operation, as read through its answer contract (src/operations/). */
export type IngestResponseByOperation = AnswerByOperation;

/** The response type that goes with a request type. */
export type IngestResponseFor<R extends IngestRequest> = IngestResponseByOperation[R['operation']];

/** A default request key for raw_responses: operation-specific, stable, human-readable. */
export function requestKeyOf(req: IngestRequest): string {
  switch (req.operation) {
    case 'similar-companies':
      return `${req.referenceUrl} ${req.filterKey} page=${req.page} num=${req.num}`;
    case 'post-details':
      return req.postUrl;
    case 'search-jobs':
      return `${req.searchKey} start=${req.start}`;
  }
}

/** Whether `value` looks like an IngestRequest (used when reading stored request_json back). */
export function isIngestRequest(value: unknown): value is IngestRequest {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  const op = v['operation'] as Operation | undefined;
  if (op === 'similar-companies') {
    return (
      typeof v['referenceUrl'] === 'string' &&
      typeof v['filterKey'] === 'string' &&
      typeof v['filters'] === 'object' &&
      v['filters'] !== null &&
      typeof v['page'] === 'number' &&
      typeof v['num'] === 'number'
    );
  }
  if (op === 'post-details') return typeof v['postUrl'] === 'string';
  if (op === 'search-jobs') {
    return typeof v['searchKey'] === 'string' && typeof v['query'] === 'object' && v['query'] !== null && typeof v['start'] === 'number';
  }
  return false;
}
