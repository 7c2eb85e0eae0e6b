/**
 * search-jobs: the answer contract of its 200 body (api.md, "Job record") and how its pages end. A job names
 * itself by `url`; every other member is optional (see answer-contract.ts).
 */
import { SEARCH_JOBS_PAGE_SIZE } from '../spec/types.ts';
import { bool, int, list, obj, str, strict, type AnswerContract, type ReadBody, type ReadObject } from './answer-contract.ts';
import { CREDIT_MEMBERS } from './credit-members.ts';

const job = obj({
  title: str(),
  company_name: str(),
  company_link: str(),
  location: str(),
  url: strict(str()),
  posted_timestamp: int(),
  posted_date: str(),
  is_actively_hiring: bool(),
  company_logo_url: str(),
  description_html: str(),
  description: str(),
  criteria: obj({ 'Employment type': str(), Industries: str(), 'Job function': str(), 'Seniority level': str() }),
});

const body = {
  success: bool(),
  message: str(),
  currentPage: int(),
  numResults: int(),
  results: list(job),
  ...CREDIT_MEMBERS,
};

export const searchJobsContract: AnswerContract<typeof body> = {
  operation: 'search-jobs',
  body,
  recordsAt: ['results'],
  identity: 'url',
  recordMembers: [],
};

export type SearchJobsAnswer = ReadBody<typeof body>;
export type JobAnswer = ReadObject<(typeof job)['members']>;

/**
 * Whether a page ends the list: both the records it holds and the count it states (`numResults`) are fewer
 * than a page (10, `start` being a record offset), so a page whose records were partly unreadable but whose
 * count says it was full does not end the paging.
 */
export function searchJobsLastPage(answer: SearchJobsAnswer): boolean {
  const held = answer.results?.length ?? 0;
  return Math.max(held, answer.numResults ?? 0) < SEARCH_JOBS_PAGE_SIZE;
}
