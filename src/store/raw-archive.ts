/**
 * raw_responses: every call's exact 200 body with its request, so `reprocess` can rebuild the tables without paying
 * again. A paid wrong-shape body is kept with `error_code` set, never read as an answer till reprocess recovers it.
 */
import type { Operation } from '../spec/types.ts';
import type { Connection } from './connection.ts';
import { requestKeyOf, type AnySubject } from '../operations/index.ts';
import { encodeRawBody } from './raw-body.ts';
import { param, sql } from '../statement.ts';

export interface RawResponseInput {
  operation: Operation;
  /** Lookup key of the request; default requestKeyOf(request). */
  requestKey?: string;
  request: AnySubject;
  /** The body text exactly as received (stored gzipped where that is smaller: see raw-body.ts). */
  body: string;
  /** ISO-8601 UTC time of receipt; reprocess replays the body with this as its seenAt. */
  receivedAt: string;
  runId: number | null;
  taskId: number | null;
  /** Why the body was not accepted (an ApiError code, e.g. SCHEMA); omitted or null for a validated body. */
  errorCode?: string | null;
}

/** The insert's head on both engines; its rows are rawValues()'s. */
export const RAW_HEAD = 'INSERT INTO raw_responses (operation, request_key, request_json, body, body_encoding, received_at, run_id, task_id, error_code)';

/** One body's values in RAW_HEAD's order, gzipped or not on SQLite (raw-body.ts); text on PostgreSQL (no encoding). */
export function rawValues(input: RawResponseInput, stored: { body: unknown; encoding: string | null }): unknown[] {
  const requestKey = input.requestKey ?? requestKeyOf(input.request);
  return [input.operation, requestKey, JSON.stringify(input.request), stored.body, stored.encoding, input.receivedAt, input.runId, input.taskId, input.errorCode ?? null];
}

/** Prepares the insert once; the returned function writes one row (caller's transaction) and returns its id. */
export function saveRawResponse(database: Connection): (input: RawResponseInput) => number {
  const insert = database.sqlite.prepare(`${RAW_HEAD} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  return (input) => Number(insert.run(...rawValues(input, encodeRawBody(input.body))).lastInsertRowid);
}

/** Marks an archived body as an answer (it validated on replay), on both engines. */
export const ACCEPT_RAW_SQL = sql`UPDATE raw_responses SET error_code = NULL WHERE id = ${param}`;
