/** reprocess's store on SQLite: bodies stored by store-answer.ts as the run's writer does, all in one transaction. */
import { prepareAnswerStore } from '../store-answer.ts';
import { clearNormalizedTables } from '../ingest/index.ts';
import { createLedger } from '../ledger.ts';
import type { Database } from '../open.ts';
import { acceptRawResponse } from '../raw-archive.ts';
import { ARCHIVE_PAGE_SQL, CLEAR_KEPT_ANOMALIES_SQL, WERE_PRUNED_SQL, type ArchivedBody, type ReprocessStore } from '../reprocess-store.ts';

/**
 * Runs `replay` in one transaction on `database`, statements prepared once (posts' day order read now): all kept or
 * none (the caller holds the run lock). The store answers at once, so nothing else runs between BEGIN and COMMIT.
 */
export async function inSqliteReprocessTransaction<T>(database: Database, replay: (store: ReprocessStore) => Promise<T>): Promise<T> {
  const { sqlite } = database;
  const storeAnswer = prepareAnswerStore(database);
  const ledger = createLedger(database);
  // Keyset pages instead of one iterate(): better-sqlite3 refuses other statements on a connection while an
  // iterator is open, and the replay writes on this connection.
  const page = sqlite.prepare(ARCHIVE_PAGE_SQL.sqlite);
  const clearAnomalies = sqlite.prepare(CLEAR_KEPT_ANOMALIES_SQL);
  const store: ReprocessStore = {
    bodiesWerePruned: () => sqlite.prepare(WERE_PRUNED_SQL).get() !== undefined,
    clearNormalizedTables: () => clearNormalizedTables(database),
    clearKeptBodiesAnomalies: () => void clearAnomalies.run(),
    archivePage: (afterId, limit) => page.all(afterId, limit) as ArchivedBody[],
    savepoint: () => void sqlite.exec('SAVEPOINT reprocess_body'),
    releaseSavepoint: () => void sqlite.exec('RELEASE reprocess_body'),
    rollbackToSavepoint: () => void sqlite.exec('ROLLBACK TO reprocess_body; RELEASE reprocess_body'),
    storeAnswer: (input) => storeAnswer(input).rows,
    acceptBody: acceptRawResponse(database),
    markRecovered: (taskId, rawId, code, receivedAt, at) => ledger.markRecovered(taskId, rawId, code, receivedAt, at),
  };
  sqlite.exec('BEGIN');
  try {
    const result = await replay(store);
    sqlite.exec('COMMIT');
    return result;
  } catch (err) {
    if (sqlite.inTransaction) sqlite.exec('ROLLBACK');
    throw err;
  }
}
