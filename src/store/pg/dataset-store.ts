/**
 * The dataset store of a PostgreSQL database: runs hold its lock shared, reprocess and prune exclusive; readers open
 * it read-only, in one snapshot, and `query` and `export` stream a cursor into SQLite's encoders (no worker threads).
 */
import type pg from 'pg';
import { UsageError } from '../../errors.ts';
import { DatabaseError } from '../errors.ts';
import { usingStatement, WRITE_META_SQL, type DatasetStore, type StorePruneOptions, type StorePruneResult } from '../dataset-store.ts';
import { CLEAR_DERIVED_SQL, NORMALIZED_TABLES } from '../ingest/index.ts';
import {
  ARCHIVE_PAGE_SQL, CLEAR_KEPT_ANOMALIES_SQL, LIST_ENDS_PAGE_SQL, WERE_PRUNED_SQL, type ArchivedBody, type ArchivedListEnd, type ReprocessStore,
} from '../reprocess-store.ts';
import { LEDGER_SQL } from '../ledger.ts';
import { pgValues } from '../../statement.ts';
import { readPg, rows } from '../read-steps.ts';
import { openPgForReading } from '../readers/open-for-reading.ts';
import { openPgDataset } from '../readers/pg-dataset.ts';
import { checkPgReadQuery } from '../readers/read-only-sql.ts';
import { pgTableRowsSql } from '../readers/table-rows.ts';
import { createPgAnswerStore } from './pg-answer-store.ts';
import { withPgPlanLedger } from './pg-plan-ledger.ts';
import { openPgRunStore } from './pg-run-store.ts';
import { startPgStatement } from './pg-statement-rows.ts';
import { pruneRawBodiesPg } from './raw-prune.ts';
import { withPgReadSnapshot, type PgSnapshot } from './read-snapshot.ts';
import { STORE_TYPES } from './reader-values.ts';
import { inPgTransaction } from './transaction.ts';
import { holdExclusive } from './dataset-lock.ts';
import { redactDatabaseUrl } from './database-url.ts';
import { openPgStore, pgReadOnlyError, usingPgStore, type PgStore } from './open.ts';

/** The store of the database at `url`; `shownUrl` is the URL as it may be printed (password hidden). */
export function pgDatasetStore(url: string, shownUrl: string): DatasetStore {
  return {
    shown: shownUrl,
    files: [],
    openRun: ({ leaseMs, rateWindowMs, serverBackWithinMs }) => openPgRunStore({ url, leaseMs, rateWindowMs, serverBackWithinMs }),
    withPlanLedger: (fn) => withPgPlanLedger(url, fn),
    read: (fn, options = {}) => inSnapshot(url, options.statementTimeoutMs, (snapshot) => fn({ ...snapshot, read: (reads) => readPg(snapshot, reads) })),
    userStatement: (options, use) => {
      checkPgReadQuery(options.sql);
      return inSnapshot(url, options.timeoutMs ?? 0, async (snapshot) => usingStatement(await startPgStatement(snapshot, options.sql, [], options), snapshot, use));
    },
    // No time limit: a table export reads each row once and always ends (the pool's default would cut a large one).
    tableRows: (query, options, use) =>
      inSnapshot(url, 0, async (snapshot) => {
        const { sql, params } = await pgTableRowsSql(snapshot, query);
        return usingStatement(await startPgStatement(snapshot, sql, params, options), snapshot, use);
      }),
    // The dataset must hold one, its lock held exclusive (withPgMaintenance); one transaction: old or rebuilt.
    reprocess: (replay) => withPgMaintenance(url, 'reprocess', ({ pool }) => inPgTransaction(pool, (client) => replay(pgReprocessStore(client)))),
    prune: (options) => prune(url, options),
    openDataset: () => openPgDataset(url),
    // Opened for reading (no migration): the report of a dataset its role may not migrate is still remembered.
    writeMeta: async (key, value) => void (await forReading(url, (pool) => readPg({ client: pool }, rows(WRITE_META_SQL, [key, value])))),
  };
}

/**
 * reprocess and prune: refused where no netingest dataset is (writing would create one by mistake), with no statement
 * timeout (it would only roll them back), under the dataset lock held exclusive (LockedError).
 */
async function withPgMaintenance<T>(url: string, command: 'reprocess' | 'prune', fn: (store: PgStore) => Promise<T>) {
  try {
    await (await openPgStore(url, { readOnly: true, maxConnections: 1 })).close();
  } catch (err) {
    if (err instanceof UsageError && err.code === 'DB_NOT_FOUND') {
      throw new UsageError(`no netingest dataset in ${redactDatabaseUrl(url)}: nothing to ${command} (see --db)`, 'DB_NOT_FOUND');
    }
    if (!(err instanceof DatabaseError && err.code === 'DB_NEEDS_MIGRATION')) throw err;
  }
  // Two connections at most at once: the lock's, and the work's.
  return usingPgStore(await openPgStore(url, { statementTimeoutMs: 0, maxConnections: 3 }), async (store) => {
    const hold = await holdExclusive(store.pool, store.shownUrl, `netingest ${command}`);
    try {
      return await fn(store);
    } catch (err) {
      // Opening writes nothing to a dataset already up to date: a read-only server is found at the first write.
      throw pgReadOnlyError(err, store.shownUrl) ?? err;
    } finally {
      await hold.release();
    }
  });
}

/** reprocess's store: one client, one transaction, so the dataset is the old or the rebuilt one, never half, even after a kill. */
function pgReprocessStore(client: pg.PoolClient): ReprocessStore {
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
    listEndsPage: async (afterId, limit) => (await client.query<ArchivedListEnd>({ text: LIST_ENDS_PAGE_SQL.postgres, values: [afterId, limit], types: STORE_TYPES })).rows,
    storeListEnd: (end) => answers.storeListEnd(client, end),
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

/**
 * `netingest prune`: the retention rule under the lock held exclusive, then a plain VACUUM: it blocks no one and
 * leaves the space to new bodies (FULL rewrites the table under an exclusive lock: the DBA's call).
 */
function prune(url: string, options: StorePruneOptions): Promise<StorePruneResult> {
  return withPgMaintenance(url, 'prune', async ({ pool }) => {
    const bytesBefore = await rawResponsesBytes(pool);
    const pruned = await pruneRawBodiesPg(pool, options);
    const vacuumed = options.vacuum && !options.dryRun && pruned.dropped > 0;
    // VACUUM cannot run in a transaction; a pooled connection outside one is what pool.query gives.
    if (vacuumed) await pool.query('VACUUM (ANALYZE) raw_responses');
    const bytesAfter = await rawResponsesBytes(pool);
    const report = { ...pruned, rawResponsesBytesBefore: bytesBefore, rawResponsesBytesAfter: bytesAfter, vacuumed };
    const note = `${vacuumed ? ' VACUUM' : ''}; PostgreSQL reuses the freed space for new bodies rather than shrinking its files`;
    return { report, space: { what: 'raw_responses on the server (table, TOAST and indexes)', bytesBefore, bytesAfter, note } };
  });
}

async function rawResponsesBytes(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ bytes: string }>(`SELECT pg_total_relation_size('raw_responses')::bigint AS bytes`);
  return Number(rows[0]!.bytes);
}

/** `fn` in one read-only snapshot of `url`; `statementTimeoutMs` 0: no limit, undefined: the pool's. */
function inSnapshot<R>(url: string, statementTimeoutMs: number | undefined, fn: (snapshot: PgSnapshot) => Promise<R>): Promise<R> {
  return forReading(url, (pool) => withPgReadSnapshot(pool, fn, { statementTimeoutMs }));
}

/** `fn` on the pool of `url` opened for reading, closed after; a server gone meanwhile is DB_CONNECTION_LOST. */
async function forReading<R>(url: string, fn: (pool: pg.Pool) => Promise<R>): Promise<R> {
  return usingPgStore(await openPgForReading(url), ({ pool }) => fn(pool));
}
