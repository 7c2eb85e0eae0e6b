/** Bodies the client tests answer with from their stand-in servers. */

/** A valid, empty search-jobs page of 200, charged 0.25 credits. */
export const EMPTY_JOBS_PAGE = {
  success: true,
  message: 'Jobs fetched',
  currentPage: 0,
  numResults: 0,
  results: [],
  total_credits: 100,
  credits_used: 0.25,
  credits_remaining: 99.75,
} as const;
