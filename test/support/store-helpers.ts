/**
 * Wrappers over the store that only tests call: the run writes through its own transaction and group commit,
 * reads each body once through the client, and files each answer under its spec's subject.
 */
import { readUsableAnswer, type UsableAnswer, type ValidationContext } from '../../src/api/schemas.ts';
import type { ReadObject } from '../../src/operations/answer-contract.ts';
import { OPERATION_SPECS, requestKeyOf, specOf, type AnySubject, type SpecOf } from '../../src/operations/index.ts';
import type { OperationSpec } from '../../src/operations/operation-spec.ts';
import type { Operation } from '../../src/spec/types.ts';
import type { Connection } from '../../src/store/connection.ts';
import { createIngestor, type IngestResult } from '../../src/store/ingest/index.ts';
import { prepareOutcomeWrite, type OutcomeOp } from '../../src/store/outcome-ops.ts';
import type { ApiCallRow } from '../../src/store/api-calls.ts';
import type { Database } from '../../src/store/open.ts';
import { inSqliteReprocessTransaction } from '../../src/store/sqlite/dataset-store.ts';
import { replay, type ReprocessOptions, type ReprocessReport } from '../../src/runner/reprocess.ts';

/** The 200 body of each operation as read through its contract. */
export type AnswerByOperation = { [O in Operation]: ReadObject<SpecOf<O>['answer']['body']> };

/** The request each operation's answer is read against (its page size), as sent. */
export type AskedByOperation = { [O in Operation]: Parameters<SpecOf<O>['send']>[0] };

/** The 200 body, as read through its answer contract (src/operations/), that goes with a request type. */
export type IngestResponseFor<R extends AnySubject> = AnswerByOperation[R['operation']];

/** Ingests one response in its own transaction. */
export function ingestInTransaction<R extends AnySubject>(
  database: Connection,
  req: R,
  response: IngestResponseFor<R>,
  seenAt: string,
  ingestor = createIngestor(database),
): IngestResult {
  return database.sqlite.transaction(() => ingestor.ingestAnswer(req, response, seenAt))();
}

/** Writes a batch of outcomes in one transaction, the statements prepared once. */
export function createOutcomeApplier(database: Connection, runId: number): (ops: readonly OutcomeOp[]) => void {
  const write = prepareOutcomeWrite(database, runId);
  return database.sqlite.transaction((ops: readonly OutcomeOp[]) => {
    for (const op of ops) write(op);
  });
}

/** A parsed 200 body read through the contract of the operation named (src's readUsableAnswer takes its spec). */
export function readOperationAnswer<O extends Operation>(operation: O, body: unknown, context: ValidationContext = {}): UsableAnswer<AnswerByOperation[O]> {
  return readUsableAnswer(OPERATION_SPECS[operation] as unknown as OperationSpec<unknown, AnswerByOperation[O]>, body, context);
}

/** A paid answer as the run's writer is handed it: its body as received and as read through its contract. */
export function successOp(o: { taskId: number; request: AnySubject; response: unknown; call: ApiCallRow; at: string; attempts?: number }): Extract<OutcomeOp, { kind: 'success' }> {
  const { answer, setAside } = readOperationAnswer(o.request.operation, o.response);
  return {
    kind: 'success', taskId: o.taskId, operation: o.request.operation, requestKey: requestKeyOf(o.request), request: o.request, body: JSON.stringify(o.response),
    answer, setAside, call: o.call, attempts: o.attempts ?? 1, at: o.at,
  };
}

/** The body as read through its contract; throws ApiSchemaError when it cannot be read (see readUsableAnswer). */
export function validateResponse<O extends Operation>(operation: O, body: unknown, context: ValidationContext = {}): AnswerByOperation[O] {
  return readOperationAnswer(operation, body, context).answer;
}

/** What an answer to `request` (a task's, as stored) is filed under: its operation's subjectOf. */
export function ingestRequestFor(operation: Operation, inputKey: string, request: unknown): AnySubject {
  return specOf(operation).subjectOf(inputKey, request);
}

/** Rebuilds the normalized tables of an open SQLite dataset from raw_responses in one transaction, without its lock. */
export function reprocess(database: Database, options: ReprocessOptions = {}): Promise<ReprocessReport> {
  return inSqliteReprocessTransaction(database, (store) => replay(store, options));
}
