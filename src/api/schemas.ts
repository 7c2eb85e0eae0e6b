/**
 * The one check every 200 body passes before it is trusted (the client on receipt, reprocess on stored bodies): read
 * through its operation's answer contract, refused (ApiSchemaError naming the path) only when unreadable at all.
 */
import { readThrough, type SetAsideRecord } from '../operations/answer-contract.ts';
import type { DriftTally } from '../operations/drift.ts';
import type { OperationSpec, Subject } from '../operations/operation-spec.ts';
import { ApiSchemaError } from './errors.ts';
import { bodyExcerpt, createOutputRedactor } from './redact.ts';
import type { ApiCallInfo } from './types.ts';
import { OPERATION_METHODS, OPERATION_PATHS, type CreditCounters } from '../spec/types.ts';
import { readableCounters } from '../credits/unread-charges.ts';

export interface UsableAnswer<T> {
  answer: T;
  /** Listed records that do not name themselves, left out (their positions and reasons). */
  setAside: SetAsideRecord[];
  drift: DriftTally;
  /** The counters when all three are finite numbers, else null. */
  credits: CreditCounters | null;
  /** Whether this page ends the input's list (always true for post-details). */
  lastPage: boolean;
}

/** Parses a body as the client does: a leading byte-order mark is legal in a body but not in JSON.parse's input. */
export function parseJsonBody(text: string): unknown {
  return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text) as unknown;
}

/** Where a body came from, when known: the client passes all of it; reprocess may pass nothing. */
export interface ValidationContext {
  call?: ApiCallInfo;
  /** The body text, kept on the error so the body can be stored and read again later. */
  raw?: string;
  /** Redacted from the error's excerpt (always) and `raw` (as from a stored body: a real-length token only). */
  secrets?: readonly string[];
}

/** A parsed 200 body read through its contract (`asked`, the request sent, tells the last page); throws ApiSchemaError when it is unreadable. */
export function readUsableAnswer<Q, A>(
  spec: OperationSpec<Q, A, Subject>,
  body: unknown,
  context: ValidationContext = {},
  asked?: Q,
): UsableAnswer<A> {
  const reading = readThrough(spec.answer, body);
  const credits = creditsOf(body);
  if (reading.usable) {
    // The contract's reading is the answer type of its operation (answer-contract.ts's ReadObject).
    const answer = reading.answer as A;
    const lastPage = spec.lastPage(asked, answer, reading.drift);
    return { answer, setAside: reading.setAside, drift: reading.drift, credits, lastPage };
  }
  const secrets = context.secrets ?? [];
  // `raw` is archived like any 200 body, so it is redacted as one: a short test token redacted everywhere would turn
  // "status" into "s[REDACTED]atus". A body without its text was parsed from JSON, so it has one again.
  const raw = createOutputRedactor(secrets)(context.raw ?? JSON.stringify(body) ?? String(body));
  const call = context.call ?? { operation: spec.name, method: OPERATION_METHODS[spec.name], path: OPERATION_PATHS[spec.name], status: 200, latencyMs: 0 };
  throw new ApiSchemaError({ call, bodyExcerpt: bodyExcerpt(raw, secrets) }, [reading.issue], raw, credits);
}

/** The credit counters of a body when all three are numbers a balance can be (readableCounters). */
export function creditsOf(body: unknown): CreditCounters | null {
  if (body === null || typeof body !== 'object') return null;
  const { total_credits, credits_used, credits_remaining } = body as Record<string, unknown>;
  const counters = { total_credits, credits_used, credits_remaining } as CreditCounters;
  return readableCounters(counters) ? counters : null;
}
