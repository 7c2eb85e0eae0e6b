/**
 * reprocess's store on PostgreSQL: all on one client in one transaction, under the dataset lock held exclusive, so
 * the dataset is the old or the rebuilt one, never half, even after a kill (the server rolls back and unlocks).
 */
import type pg from 'pg';
import { CLEAR_DERIVED_SQL, NORMALIZED_TABLES } from '../ingest/index.ts';
import { ARCHIVE_PAGE_SQL, CLEAR_KEPT_ANOMALIES_SQL, WERE_PRUNED_SQL, type ArchivedBody, type ReprocessStore } from '../reprocess-store.ts';
import { LEDGER_SQL } from '../ledger.ts';
import { pgValues } from '../../statement.ts';
import { createPgAnswerStore } from './pg-answer-store.ts';
import { STORE_TYPES } from './reader-values.ts';

/** The store over `client`, inside the one transaction reprocess runs in (pg/dataset-store.ts). */
export function pgReprocessStore(client: pg.PoolClient): ReprocessStore {
  const answers = createPgAnswerStore();
  const run = async (text: string, values: unknown[] = []) => (await client.query(text, values)).rowCount ?? 0;
  return {
    bodiesWerePruned: async () => (await run(WERE_PRUNED_SQL)) > 0,
    async clearNormalizedTables() {
      let rows = 0;
      for (const table of NORMALIZED_TABLES) rows += await run(`DELETE FROM ${table}`);
      for (const text of CLEAR_DERIVED_SQL) await run(text);
      return rows;
    },
    clearKeptBodiesAnomalies: async () => void (await run(CLEAR_KEPT_ANOMALIES_SQL)),
    // Times as ISO text with milliseconds and ids as numbers (STORE_TYPES), as the replay reads them on SQLite.
    archivePage: async (afterId, limit) => (await client.query<ArchivedBody>({ text: ARCHIVE_PAGE_SQL.postgres, values: [afterId, limit], types: STORE_TYPES })).rows,
    savepoint: async () => void (await run('SAVEPOINT reprocess_body')),
    releaseSavepoint: async () => void (await run('RELEASE SAVEPOINT reprocess_body')),
    async rollbackToSavepoint() {
      await run('ROLLBACK TO SAVEPOINT reprocess_body');
      await run('RELEASE SAVEPOINT reprocess_body');
    },
    storeAnswer: async (input) => (await answers.store(client, input)).rows,
    acceptBody: async (rawId) => void (await run('UPDATE raw_responses SET error_code = NULL WHERE id = $1', [rawId])),
    markRecovered: async (id, rawId, code, receivedAt, at) =>
      (await run(LEDGER_SQL.markRecovered.postgres, pgValues(LEDGER_SQL.markRecovered, { id, rawId, code, receivedAt, at }))) > 0,
  };
}
