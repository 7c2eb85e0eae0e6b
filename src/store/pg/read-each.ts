/**
 * Readers run in lockstep on one connection: each round sends the next statement of every reader not yet done in one
 * round trip (pg-pipeline.ts), so enrich's chunk of input rows costs its deepest reader's rounds, not a trip a statement.
 */
import type pg from 'pg';
import { pgStatement, type Reads, type ReadStep } from '../read-steps.ts';
import { READER_TYPES, STORE_TYPES } from './reader-values.ts';
import { pipelineStatements } from './pg-pipeline.ts';

/** Each reader's answer, in the readers' order, read in the caller's transaction (the snapshot's). */
export async function readEachPg<T>(snapshot: { client: pg.ClientBase }, readers: readonly Reads<T>[]): Promise<T[]> {
  const answers = new Array<T>(readers.length);
  let going = readers.map((reads, index) => ({ reads, index, step: reads.next() }));
  for (;;) {
    for (const r of going) if (r.step.done) answers[r.index] = r.step.value;
    going = going.filter((r) => !r.step.done);
    if (going.length === 0) return answers;
    const statements = going.map((r) => pgStatement(r.step.value as ReadStep, { READER_TYPES, STORE_TYPES }));
    const results = await pipelineStatements(snapshot.client, statements);
    going.forEach((r, i) => (r.step = r.reads.next(results[i]!.rows)));
  }
}
