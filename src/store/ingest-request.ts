/**
 * What a stored answer is filed under (raw_responses.request_json): the 200 bodies do not say which company,
 * post or query they answer, so the runner passes it along, and `reprocess` replays a body without the
 * ledger. Each operation's spec defines its own (subjectOf, its schema and its request key).
 */
import type { AnySubject } from '../operations/index.ts';

export { requestKeyOf } from '../operations/index.ts';

/** The request a response answers. */
export type IngestRequest = AnySubject;
