/**
 * The one check every 200 body passes before anything downstream trusts it (the client on receipt, the writer
 * and reprocess on stored bodies): it is read through its operation's answer contract (src/operations/), and
 * only a body the contract cannot read at all is refused, as an ApiSchemaError naming the path. A body that
 * can be read is used whatever members it lacks or sends in a variant of their type: that is drift, counted
 * and reported, not an error.
 */
import { readAnswerOf, type UsableAnswer } from '../operations/answers.ts';
import type { OperationSpec, Subject } from '../operations/operation-spec.ts';
import { ApiSchemaError } from './errors.ts';
import { bodyExcerpt, createOutputRedactor } from './redact.ts';
import type { ApiCallInfo } from './types.ts';
import { OPERATION_METHODS, OPERATION_PATHS } from '../spec/types.ts';

/** Where a body came from, when known: the client passes all of it; reprocess may pass nothing. */
export interface ValidationContext {
  call?: ApiCallInfo;
  /** The body text, kept on the error so the body can be stored and read again later. */
  raw?: string;
  /** Redacted from the error's excerpt (always) and `raw` (as from a stored body: a real-length token only). */
  secrets?: readonly string[];
}

/**
 * Reads a parsed 200 body through its operation's contract; `asked` (the request sent) lets it tell the last page.
 * Throws ApiSchemaError when the body cannot be read at all, e.g. `data.content: expected an array of records,
 * received string`.
 */
export function readUsableAnswer<Q, A>(
  spec: OperationSpec<Q, A, Subject>,
  body: unknown,
  context: ValidationContext = {},
  asked?: Q,
): UsableAnswer<A> {
  const reading = readAnswerOf(spec, body, asked);
  if (reading.usable) return reading;
  const secrets = context.secrets ?? [];
  // `raw` is archived like any 200 body (raw_responses), so it gets the same redaction as one: a short test
  // token redacted everywhere would mangle the body ("status" -> "s[REDACTED]atus"). The excerpt is a message.
  // A body without its text was parsed from JSON, so it has one again (undefined aside).
  const raw = createOutputRedactor(secrets)(context.raw ?? JSON.stringify(body) ?? String(body));
  const call = context.call ?? { operation: spec.name, method: OPERATION_METHODS[spec.name], path: OPERATION_PATHS[spec.name], status: 200, latencyMs: 0 };
  throw new ApiSchemaError({ call, bodyExcerpt: bodyExcerpt(raw, secrets) }, [reading.issue], raw, reading.credits);
}
