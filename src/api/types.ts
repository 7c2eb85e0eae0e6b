/** The API client's public shapes: what a call resolves to and the facts recorded; records come from spec/types.ts. */
import type { Operation, OPERATION_METHODS } from '../spec/types.ts';
import type { UsableAnswer } from './schemas.ts';
import type { createApiClient } from './client.ts';

/** Facts about one HTTP call, for the `api_calls` log and for errors. Never holds the token. */
export interface ApiCallInfo {
  operation: Operation;
  /** The operation's, as api.md prescribes. */
  method: (typeof OPERATION_METHODS)[Operation];
  /** Path and query string as sent (base-URL path prefix included), without scheme or host. */
  path: string;
  /** HTTP status, or null when no response arrived (network failure, timeout before headers). */
  status: number | null;
  /** From sending the request to the last body byte read (or the failure), in milliseconds. */
  latencyMs: number;
}

/** A 200 body its operation's contract could read, with the reading's credits, lastPage, drift and set-aside rows. */
export interface ApiOk<T> extends Omit<UsableAnswer<T>, 'answer'> {
  kind: 'ok';
  /** The body as read through the contract: every member the spec names is there, as its type or null. */
  data: T;
  /** The body text as received (the token, were it echoed, is redacted). */
  raw: string;
  call: ApiCallInfo;
}

/** A 404: the lookup found nothing (the service does not charge for it). */
export interface ApiNotFound {
  kind: 'not_found';
  /** `message` of the body when it is a string, else null. */
  message: string | null;
  /** The body text as received ('' when there was none). */
  raw: string;
  call: ApiCallInfo;
}

/** What every operation resolves to; anything else is thrown as an ApiError. */
export type ApiResult<T> = ApiOk<T> | ApiNotFound;

/** The client: one generic call, sent and read as the operation's spec says (its members: createApiClient). */
export type ApiClient = ReturnType<typeof createApiClient>;
