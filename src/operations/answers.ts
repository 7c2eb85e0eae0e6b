/**
 * Every operation's answer contract behind one call: `readAnswerOf(spec, body, asked)` reads a parsed 200
 * body through its spec's contract and says whether it can be used, what it holds (members read, records set
 * aside), its drift, its credit counters and whether its page ends the list (the spec's lastPage). The client, the writer and reprocess all
 * read through it, so an answer stored live and one recovered by reprocess are read alike.
 */
import type { CreditCounters } from '../spec/types.ts';
import { readThrough, type AnswerContract, type SetAsideRecord, type UnusableIssue } from './answer-contract.ts';
import type { DriftTally } from './drift.ts';
import { otherSiteHost } from '../urls/canonical.ts';
import { networkHost } from '../urls/network-host.ts';
import type { OperationSpec, Subject } from './operation-spec.ts';

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

/** Reads a parsed 200 body through `spec`'s contract; `asked` is the request when known (paging). */
export function readAnswerOf<Q, A>(spec: OperationSpec<Q, A, Subject>, body: unknown, asked?: Q): AnswerReading<A> {
  const reading = readThrough(spec.answer, body);
  if (!reading.usable) return { usable: false, issue: reading.issue, credits: creditsOf(body) };
  // The contract's reading is the answer type of its operation (answer-contract.ts's ReadObject).
  const answer = reading.answer as A;
  const lastPage = spec.lastPage(asked, answer, reading.drift);
  noteOtherSiteRecords(spec.answer, answer, reading.drift);
  return { usable: true, answer, setAside: reading.setAside, drift: reading.drift, credits: creditsOf(body), lastPage };
}

/**
 * Counts as drift (`host`) each listed record named by a page on another site than the network's (a sandbox or
 * service answering for another brand): its operation's rows leave it out (stored-values.ts, recordUrlKey), so
 * the run says it once per path instead of storing `https://other.example/company/x` beside the network's own.
 */
function noteOtherSiteRecords(contract: AnswerContract, answer: unknown, drift: DriftTally): void {
  const { recordsAt, identity } = contract;
  if (recordsAt === null || identity === null) return;
  let records: unknown = answer;
  for (const name of recordsAt) records = (records as Record<string, unknown> | null)?.[name];
  if (!Array.isArray(records)) return;
  const host = networkHost();
  const list = `${recordsAt.join('.')}[]`;
  for (const record of records) {
    const other = otherSiteHost((record as Record<string, unknown> | null)?.[identity], host);
    if (other !== null) drift.note(`${list}.${identity}`, list, 'host', `${other}, not ${host}`);
  }
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
