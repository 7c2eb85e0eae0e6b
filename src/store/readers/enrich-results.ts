/**
 * The prepared lookups that fetch one input's results for `enrich` (bounded: the pages of one input), so the
 * whole result set is never in memory. Which columns, and how they are read, is the job's operation's
 * (its spec's `enrich`); the results of an input are those of each page's latest answer (latest-answers.ts).
 * docs/export.md lists every column; the names are a public contract.
 */
import type { Job } from '../../jobs/schema.ts';
import { specOf } from '../../operations/index.ts';
import type { EnrichReader } from '../../operations/operation-spec.ts';
import { answerFloorsOf } from './latest-answers.ts';
import { rawRows, type Reads } from '../read-steps.ts';

/** Looks up the result rows of one input, each already in the order of `columns`. */
export interface ResultLookup {
  columns: readonly string[];
  /** Result rows of the input with this key (canonical URL or search key); [] when there are none. */
  find(inputKey: string): Reads<unknown[][]>;
}

/**
 * The result columns and lookup of `job`'s operation, as Reads (read-steps.ts) that run on either engine;
 * `jobs` are the job and the others asking the same question (otherJobsWithOperationReads).
 */
export function resultLookup(job: Job, jobs: readonly string[]): ResultLookup {
  const { enrich } = specOf(job.operation);
  const reader: EnrichReader = {
    rows: (sql) => ({ all: (params) => rawRows(sql, params) }),
    floors: answerFloorsOf(job, jobs),
  };
  return { columns: enrich.columns, find: enrich.lookup(reader, job) };
}
