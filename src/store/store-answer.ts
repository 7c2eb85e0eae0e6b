/**
 * Stores one archived 200 body: reads it through its operation's answer contract (the same reading the client
 * made on receipt), upserts what it holds, and records what it held that was not stored as a record (records
 * set aside, a post answer naming another post). The run's writer and reprocess both store through it, so a
 * body stored live and one recovered by reprocess are stored alike.
 */
import { parseJsonBody } from '../api/json-body.ts';
import { readUsableAnswer } from '../api/schemas.ts';
import { recordAnswerAnomalies, setAsideAnomalies, type AnomalySource } from './answer-anomalies.ts';
import type { Connection } from './connection.ts';
import type { IngestRequest } from './ingest-request.ts';
import { createIngestor, type IngestResult } from '../store/ingest/index.ts';

/** One archived body to store, and where it came from (its raw_responses row). */
export interface StoredBody extends AnomalySource {
  request: IngestRequest;
  body: string;
}

/**
 * Prepares the statements once; the returned function stores one body (caller's transaction) and throws
 * ApiSchemaError when its contract cannot read it, SyntaxError when it is not JSON.
 */
export function prepareAnswerStore(database: Connection): (input: StoredBody) => IngestResult {
  const ingestor = createIngestor(database);
  const record = recordAnswerAnomalies(database);
  return (input) => {
    const operation = input.request.operation;
    const reading = readUsableAnswer(operation, parseJsonBody(input.body), { raw: input.body });
    const result = ingestor.ingestAnswer(input.request, reading.answer, input.at, { runId: input.runId ?? null, taskId: input.taskId ?? null });
    record(input, [...setAsideAnomalies(reading.setAside), ...(result.anomalies ?? [])]);
    return result;
  };
}
