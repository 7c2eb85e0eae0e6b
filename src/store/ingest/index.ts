/**
 * The normalizers behind one entry point: `createIngestor(database).ingest(request, response, seenAt)` writes
 * a validated 200 body into the normalized tables. Statements are prepared once per ingestor. The caller owns
 * the transaction, so a response, its raw body, its task status and its api_calls row commit together.
 */
import type { Connection } from '../connection.ts';
import type { IngestRequest, IngestResponseFor } from '../ingest-request.ts';
import { preparePostDetails } from './post-details.ts';
import { prepareSearchJobs } from './search-jobs.ts';
import { prepareSimilarCompanies } from './similar-companies.ts';
import { assertIsoTimestamp } from './values.ts';
import type { AnswerAnomaly } from '../answer-anomalies.ts';

/** What one ingest wrote. */
export interface IngestResult {
  /** Rows inserted or updated, over every normalized table. */
  rows: number;
  /** Records left out because they carry no URL or id to key them by (none in valid responses). */
  skipped: number;
  /** What the answer held that was not stored as asked (a post answer naming another post): see answer_anomalies. */
  anomalies?: AnswerAnomaly[];
}

/** Writes validated responses into the normalized tables. */
export interface Ingestor {
  /**
   * Upserts one response; every timestamp written is `seenAt` (ISO-8601 UTC), so a replay reproduces them.
   * Must run inside a transaction the caller opened; throws otherwise.
   */
  ingest<R extends IngestRequest>(req: R, response: IngestResponseFor<R>, seenAt: string): IngestResult;
}

/** The normalized tables, children before parents (the order to empty them in). */
export const NORMALIZED_TABLES = [
  'company_locations',
  'company_industries',
  'company_specialities',
  'company_hashtags',
  'similar_companies',
  'companies',
  'post_media',
  'posts',
  'job_search_results',
  'job_searches',
  'jobs',
] as const;

/** Prepares every normalizer's statements once. */
export function createIngestor(database: Connection): Ingestor {
  const { sqlite } = database;
  const similar = prepareSimilarCompanies(sqlite);
  const post = preparePostDetails(sqlite);
  const jobs = prepareSearchJobs(sqlite);
  return {
    ingest(req, response, seenAt) {
      if (!sqlite.inTransaction) {
        throw new Error('ingest() must run inside a transaction (the caller commits the response with its bookkeeping)');
      }
      assertIsoTimestamp(seenAt);
      // The generic ties `response` to `req.operation`; narrowing the union needs the casts below.
      const r: IngestRequest = req;
      switch (r.operation) {
        case 'similar-companies':
          return similar(r, response as IngestResponseFor<typeof r>, seenAt);
        case 'post-details':
          return post(r, response as IngestResponseFor<typeof r>, seenAt);
        case 'search-jobs':
          return jobs(r, response as IngestResponseFor<typeof r>, seenAt);
        default:
          throw new Error(`unknown operation ${String((r as { operation: unknown }).operation)}`);
      }
    },
  };
}

/** Ingests one response in its own transaction (tests, tools); the runner uses its own transaction instead. */
export function ingestInTransaction<R extends IngestRequest>(
  database: Connection,
  req: R,
  response: IngestResponseFor<R>,
  seenAt: string,
  ingestor: Ingestor = createIngestor(database),
): IngestResult {
  return database.sqlite.transaction(() => ingestor.ingest(req, response, seenAt))();
}

/** Deletes every row of the normalized tables (bookkeeping and raw_responses untouched); caller's transaction. */
export function clearNormalizedTables(database: Connection): number {
  let rows = 0;
  for (const table of NORMALIZED_TABLES) rows += database.sqlite.prepare(`DELETE FROM ${table}`).run().changes;
  return rows;
}
