/**
 * reprocess's store on PostgreSQL (store/reprocess-store.ts): the dataset lock held exclusive for the whole
 * rebuild (refused while any worker holds it shared), and every read and write on one client in one
 * transaction, so the dataset is the old one or the rebuilt one, never half; a process killed mid-way leaves
 * the old one (the server rolls back and lets go of the lock with its connection). Bodies are stored by
 * pg-answer-store.ts, as the run's writer stores them.
 */
import type pg from 'pg';
import { UsageError } from '../../errors.ts';
import { DatabaseError } from '../errors.ts';
import { NORMALIZED_TABLES } from '../ingest/index.ts';
import type { ArchivedBody, ReprocessStore } from '../reprocess-store.ts';
import { redactDatabaseUrl } from './database-url.ts';
import { createPgAnswerStore } from './pg-answer-store.ts';
import { holdExclusive } from './dataset-lock.ts';
import { openPgStore } from './open.ts';
import { STORE_TYPES } from './reader-values.ts';

/** Times as ISO text with milliseconds and ids as numbers (STORE_TYPES), as the replay reads them on SQLite. */
const ARCHIVE_PAGE = `SELECT id, operation, request_key AS "requestKey", request_json::text AS "requestJson", body,
    body_encoding AS "bodyEncoding", received_at AS "receivedAt", task_id AS "taskId", run_id AS "runId", error_code AS "errorCode"
  FROM raw_responses WHERE id > $1 ORDER BY id LIMIT $2`;

/** ledger.ts's markRecovered in PostgreSQL's dialect. */
const MARK_RECOVERED = `UPDATE tasks SET status = 'done', last_error_code = NULL, last_error = NULL, retryable = NULL,
    updated_at = $5, completed_at = $4
  WHERE id = $1 AND status = 'failed' AND last_error_code = $3
    AND NOT EXISTS (SELECT 1 FROM raw_responses r WHERE r.task_id = $1 AND r.id > $2)`;

/** The store over `client`, inside the transaction reprocessOnPg opened. */
export function pgReprocessStore(client: pg.PoolClient): ReprocessStore {
  const answers = createPgAnswerStore();
  const run = async (text: string, values: unknown[] = []) => (await client.query(text, values)).rowCount ?? 0;
  return {
    bodiesWerePruned: async () => (await run(`SELECT 1 FROM netingest_meta WHERE key = 'raw_pruned_at'`)) > 0,
    async clearNormalizedTables() {
      let rows = 0;
      for (const table of NORMALIZED_TABLES) rows += await run(`DELETE FROM ${table}`);
      return rows;
    },
    clearKeptBodiesAnomalies: async () => void (await run('DELETE FROM answer_anomalies WHERE raw_response_id IN (SELECT id FROM raw_responses)')),
    archivePage: async (afterId, limit) => (await client.query<ArchivedBody>({ text: ARCHIVE_PAGE, values: [afterId, limit], types: STORE_TYPES })).rows,
    savepoint: async () => void (await run('SAVEPOINT reprocess_body')),
    releaseSavepoint: async () => void (await run('RELEASE SAVEPOINT reprocess_body')),
    async rollbackToSavepoint() {
      await run('ROLLBACK TO SAVEPOINT reprocess_body');
      await run('RELEASE SAVEPOINT reprocess_body');
    },
    storeAnswer: async (input) => (await answers.store(client, input)).rows,
    acceptBody: async (rawId) => void (await run('UPDATE raw_responses SET error_code = NULL WHERE id = $1', [rawId])),
    markRecovered: async (taskId, rawId, code, receivedAt, at) => (await run(MARK_RECOVERED, [taskId, rawId, code, receivedAt, at])) > 0,
  };
}

/**
 * Opens the dataset at `url` (it must hold one), holds its lock exclusive and runs `replay` in one transaction
 * on one client: committed when it returns, rolled back when it throws. The lock goes on every path.
 */
export async function reprocessOnPg<T>(url: string, replay: (store: ReprocessStore) => Promise<T>): Promise<T> {
  await refuseEmpty(url);
  // Maintenance the user asked for, as prune's: emptying and rebuilding a large table may take past the run's
  // per-statement limit, and a timeout would only roll the whole rebuild back.
  const store = await openPgStore(url, { statementTimeoutMs: 0, maxConnections: 3 });
  try {
    const hold = await holdExclusive(store.pool, store.shownUrl, 'netingest reprocess');
    try {
      return await inTransaction(store.pool, (client) => replay(pgReprocessStore(client)));
    } finally {
      await hold.release();
    }
  } finally {
    await store.close();
  }
}

/** An empty database is refused as SQLite refuses a missing file, before opening it creates the schema there. */
async function refuseEmpty(url: string): Promise<void> {
  try {
    await (await openPgStore(url, { readOnly: true, maxConnections: 1 })).close();
  } catch (err) {
    // An older netingest's dataset is fine: the open below upgrades it.
    if (err instanceof DatabaseError && err.code === 'DB_NEEDS_MIGRATION') return;
    if (err instanceof UsageError && err.code === 'DB_NOT_FOUND') {
      throw new UsageError(`no netingest dataset in ${redactDatabaseUrl(url)}: nothing to reprocess (see --db)`, 'DB_NOT_FOUND');
    }
    throw err;
  }
}

async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    // A client whose ROLLBACK fails (a lost connection) is not given back to the pool.
    await client.query('ROLLBACK').catch((rollbackErr: Error) => (broken = rollbackErr));
    throw err;
  } finally {
    client.release(broken);
  }
}
