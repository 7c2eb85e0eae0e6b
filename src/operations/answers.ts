/**
 * Every operation's answer contract behind one call: `readAnswer(operation, body, asked)` reads a parsed 200
 * body through its contract and says whether it can be used, what it holds (members read, records set aside),
 * its drift, its credit counters and whether its page ends the list. The client, the writer and reprocess all
 * read through it, so an answer stored live and one recovered by reprocess are read alike.
 */
import type { CreditCounters, Operation, SearchJobsQuery, SimilarCompaniesRequest } from '../spec/types.ts';
import { readThrough, type Members, type SetAsideRecord, type UnusableIssue } from './answer-contract.ts';
import type { DriftTally } from './drift.ts';
import { postDetailsContract, type PostDetailsAnswer } from './post-details.ts';
import { searchJobsContract, searchJobsLastPage, type SearchJobsAnswer } from './search-jobs.ts';
import { similarCompaniesContract, similarCompaniesLastPage, type SimilarCompaniesAnswer } from './similar-companies.ts';

/** The 200 body of each operation as read through its contract. */
export interface AnswerByOperation {
  'similar-companies': SimilarCompaniesAnswer;
  'post-details': PostDetailsAnswer;
  'search-jobs': SearchJobsAnswer;
}

/** The request each operation's answer is read against (its page size), as sent. */
export interface AskedByOperation {
  'similar-companies': SimilarCompaniesRequest;
  'post-details': { url: string };
  'search-jobs': SearchJobsQuery;
}

/** A body that could be read. */
export interface UsableAnswer<T> {
  usable: true;
  answer: T;
  /** Listed records that do not name themselves, left out (their positions and reasons). */
  setAside: SetAsideRecord[];
  drift: DriftTally;
  /** The counters when all three are finite numbers, else null. */
  credits: CreditCounters | null;
  /** Whether this page ends the input's list (always true for post-details). */
  lastPage: boolean;
}

export type AnswerReading<T> = UsableAnswer<T> | { usable: false; issue: UnusableIssue; credits: CreditCounters | null };

const CONTRACTS = {
  'similar-companies': similarCompaniesContract,
  'post-details': postDetailsContract,
  'search-jobs': searchJobsContract,
} as const;

/** Reads a parsed 200 body of `operation` through its contract; `asked` is the request when known (paging). */
export function readAnswer<O extends Operation>(operation: O, body: unknown, asked?: AskedByOperation[O]): AnswerReading<AnswerByOperation[O]> {
  const reading = readThrough(CONTRACTS[operation] as { body: Members } as never, body) as ReturnType<typeof readThrough>;
  if (!reading.usable) return { usable: false, issue: reading.issue, credits: creditsOf(body) };
  const answer = reading.answer as unknown as AnswerByOperation[O];
  let lastPage = true;
  if (operation === 'similar-companies') {
    lastPage = similarCompaniesLastPage(asked as SimilarCompaniesRequest | undefined, answer as SimilarCompaniesAnswer, reading.drift);
  } else if (operation === 'search-jobs') {
    lastPage = searchJobsLastPage(answer as SearchJobsAnswer);
  }
  return { usable: true, answer, setAside: reading.setAside, drift: reading.drift, credits: creditsOf(body), lastPage };
}

/** The credit counters of a body when all three are finite numbers (1e400 parses as Infinity, which no balance is). */
export function creditsOf(body: unknown): CreditCounters | null {
  if (body === null || typeof body !== 'object') return null;
  const { total_credits, credits_used, credits_remaining } = body as Record<string, unknown>;
  if (!isFiniteNumber(total_credits) || !isFiniteNumber(credits_used) || !isFiniteNumber(credits_remaining)) return null;
  return { total_credits, credits_used, credits_remaining };
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}
