/**
 * The dataset store of a PostgreSQL database: runs hold its lock shared, reprocess and prune exclusive; readers open
 * it read-only, in one snapshot, and `query` and `export` stream a cursor into SQLite's encoders (no worker threads).
 */
import type pg from 'pg';
import { WRITE_META_SQL, type DatasetStore, type StartedStatement, type StorePruneOptions, type StorePruneResult } from '../dataset-store.ts';
import type { ReadSnapshot } from '../read-snapshot.ts';
import { readPg, rows } from '../read-steps.ts';
import { openPgForReading } from '../readers/open-for-reading.ts';
import { openPgDataset } from '../readers/pg-dataset.ts';
import { checkPgReadQuery } from '../readers/read-only-sql.ts';
import { pgTableRowsSql } from '../readers/table-rows.ts';
import { withPgPlanLedger } from './pg-plan-ledger.ts';
import { pgReprocessStore } from './pg-reprocess-store.ts';
import { openPgRunStore } from './pg-run-store.ts';
import { startPgStatement } from './pg-statement-rows.ts';
import { withPgMaintenance } from './maintenance.ts';
import { pruneRawBodiesPg } from './raw-prune.ts';
import { withPgReadSnapshot, type PgSnapshot } from './read-snapshot.ts';
import { inPgTransaction } from './transaction.ts';
import { usingPgStore } from './open.ts';

/** The store of the database at `url`; `shownUrl` is the URL as it may be printed (password hidden). */
export function pgDatasetStore(url: string, shownUrl: string): DatasetStore {
  return {
    shown: shownUrl,
    files: [],
    openRun: ({ leaseMs, rateWindowMs }) => openPgRunStore({ url, leaseMs, rateWindowMs }),
    withPlanLedger: (fn) => withPgPlanLedger(url, fn),
    read: (fn, options = {}) => inSnapshot(url, options.statementTimeoutMs, (snapshot) => fn({ ...snapshot, read: (reads) => readPg(snapshot, reads) })),
    userStatement: (options, use) => {
      checkPgReadQuery(options.sql);
      return inSnapshot(url, options.timeoutMs ?? 0, async (snapshot) => started(await startPgStatement(snapshot, options.sql, [], options), snapshot, use));
    },
    // No time limit: a table export reads each row once and always ends (the pool's default would cut a large one).
    tableRows: (query, options, use) =>
      inSnapshot(url, 0, async (snapshot) => {
        const { sql, params } = await pgTableRowsSql(snapshot, query);
        return started(await startPgStatement(snapshot, sql, params, options), snapshot, use);
      }),
    // The dataset must hold one (maintenance.ts), the lock held exclusive; one transaction: the old dataset or the rebuilt one.
    reprocess: (replay) => withPgMaintenance(url, 'reprocess', ({ pool }) => inPgTransaction(pool, (client) => replay(pgReprocessStore(client)))),
    prune: (options) => prune(url, options),
    openDataset: () => openPgDataset(url),
    // Opened for reading (no migration): the report of a dataset its role may not migrate is still remembered.
    writeMeta: async (key, value) => void (await forReading(url, (pool) => readPg({ client: pool }, rows(WRITE_META_SQL, [key, value])))),
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

async function started<R>(statement: StartedStatement, snapshot: ReadSnapshot, use: (statement: StartedStatement, snapshot: ReadSnapshot) => Promise<R>): Promise<R> {
  try {
    return await use(statement, snapshot);
  } finally {
    await statement.close();
  }
}
