/**
 * Stores one 200 answer as its contract read it: upserts what it holds and records what was not stored as a record
 * (set aside, another post). The run's writer and reprocess (each archived body read through the same contract) both
 * store through here, so a body stored live and one recovered later are stored alike.
 */
import type { SetAsideRecord } from '../operations/answer-contract.ts';
import { recordAnswerAnomalies, setAsideAnomalies, type AnomalySource } from './answer-anomalies.ts';
import type { Connection } from './connection.ts';
import type { AnySubject } from '../operations/index.ts';
import { createIngestor, type IngestResult } from '../store/ingest/index.ts';

/** One answer to store as its contract read it, and where it came from (its raw_responses row). */
export interface StoredAnswer extends AnomalySource {
  request: AnySubject;
  /** The body as read through its operation's answer contract. */
  answer: unknown;
  /** The listed records the contract set aside. */
  setAside: readonly SetAsideRecord[];
}

/** Prepares the statements once; the returned function stores one answer (caller's transaction). */
export function prepareAnswerStore(database: Connection): (input: StoredAnswer) => IngestResult {
  const ingestor = createIngestor(database);
  const record = recordAnswerAnomalies(database);
  return (input) => {
    const result = ingestor.ingestAnswer(input.request, input.answer, input.at, { runId: input.runId ?? null, taskId: input.taskId ?? null });
    record(input, [...setAsideAnomalies(input.setAside), ...(result.anomalies ?? [])]);
    return result;
  };
}
