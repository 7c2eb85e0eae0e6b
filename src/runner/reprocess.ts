/**
 * Rebuilds every normalized table from raw_responses, without calling the API: after a normalizer fix, or to
 * check that the dataset is what the archived bodies say. One transaction: the dataset is either the old one
 * or the fully rebuilt one, never half of each. Each body is replayed with seenAt = its received_at, in id
 * order (the order the runner wrote them), so an unchanged database ends with the same dataset.
 */
import { ApiSchemaError } from '../api/errors.ts';
import { validateResponse } from '../api/schemas.ts';
import { clearNormalizedTables, createIngestor } from '../db/ingest/index.ts';
import { isIngestRequest } from '../db/ingest-request.ts';
import type { Database } from '../db/open.ts';
import { parseJsonBody } from '../api/json-body.ts';
import { OPERATIONS, type Operation } from '../spec/types.ts';

/** Options of reprocess(); every default here. */
export interface ReprocessOptions {
  /** Raw rows read per query. Default 200 (bodies can be large; this bounds memory). */
  batchSize?: number;
  /** How many rejected bodies the report lists in full. Default 20. */
  maxListedInvalid?: number;
  /** Called after every batch with the number of bodies seen so far. */
  onProgress?: (seen: number) => void;
}

const DEFAULTS = { batchSize: 200, maxListedInvalid: 20 } as const;

/** A stored body that could not be replayed. */
export interface RejectedRaw {
  id: number;
  operation: string;
  reason: string;
}

/** What reprocess() did. */
export interface ReprocessReport {
  /** raw_responses rows read. */
  responses: number;
  /** Bodies written back into the normalized tables. */
  replayed: number;
  /** Bodies left out: not JSON, no longer valid, or an unreadable request (counted, not fatal). */
  invalid: number;
  /** The first `maxListedInvalid` of them. */
  rejected: RejectedRaw[];
  /** Normalized rows deleted before the replay. */
  rowsDeleted: number;
  /** Normalized rows written by the replay (inserts and updates). */
  rowsWritten: number;
}

interface RawRow {
  id: number;
  operation: string;
  requestJson: string;
  body: string;
  receivedAt: string;
}

/** Rebuilds the normalized tables from raw_responses in one transaction. */
export function reprocess(database: Database, options: ReprocessOptions = {}): ReprocessReport {
  const opts = { ...DEFAULTS, ...options };
  const { sqlite } = database;
  const ingestor = createIngestor(database);
  // Keyset pages instead of one iterate(): better-sqlite3 refuses other statements on a connection while an
  // iterator is open, and the replay writes on this connection.
  const page = sqlite.prepare(
    `SELECT id, operation, request_json AS requestJson, body, received_at AS receivedAt
     FROM raw_responses WHERE id > ? ORDER BY id LIMIT ?`,
  );
  const report: ReprocessReport = { responses: 0, replayed: 0, invalid: 0, rejected: [], rowsDeleted: 0, rowsWritten: 0 };
  const reject = (row: RawRow, reason: string) => {
    report.invalid++;
    if (report.rejected.length < opts.maxListedInvalid) report.rejected.push({ id: row.id, operation: row.operation, reason });
  };
  // Nested transaction() = a savepoint: a body that fails half-way leaves none of its rows.
  const replayOne = sqlite.transaction((row: RawRow) => {
    const operation = row.operation as Operation;
    const request = JSON.parse(row.requestJson) as unknown;
    if (!isIngestRequest(request) || request.operation !== operation) throw new Error('stored request_json is not a request of this operation');
    const body = validateResponse(operation, parseJsonBody(row.body), { raw: row.body });
    return ingestor.ingest(request, body as never, row.receivedAt).rows;
  });

  sqlite.transaction(() => {
    report.rowsDeleted = clearNormalizedTables(database);
    let lastId = 0;
    for (;;) {
      const rows = page.all(lastId, opts.batchSize) as RawRow[];
      if (rows.length === 0) break;
      for (const row of rows) {
        lastId = row.id;
        report.responses++;
        if (!(OPERATIONS as readonly string[]).includes(row.operation)) {
          reject(row, `unknown operation ${row.operation}`);
          continue;
        }
        try {
          report.rowsWritten += replayOne(row);
          report.replayed++;
        } catch (err) {
          reject(row, describe(err));
        }
      }
      opts.onProgress?.(report.responses);
    }
  })();
  return report;
}

function describe(err: unknown): string {
  if (err instanceof SyntaxError) return `not JSON: ${err.message}`;
  if (err instanceof ApiSchemaError) return `no longer valid: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}
