/**
 * The dataset store of a PostgreSQL database: runs hold its lock shared, reprocess and prune exclusive; readers open
 * it read-only, in one snapshot, and `query` and `export` stream a cursor into SQLite's encoders (no worker threads).
 */
import type pg from 'pg';
import { UsageError } from '../../errors.ts';
import { DatabaseError } from '../errors.ts';
import { commandRefusal, usingStatement, WRITE_META_SQL, type DatasetStore, type StorePruneOptions, type StorePruneResult } from '../dataset-store.ts';
import { CLEAR_DERIVED_SQL, NORMALIZED_TABLES } from '../ingest/index.ts';
import {
  ARCHIVE_PAGE_SQL, CLEAR_KEPT_ANOMALIES_SQL, LIST_ENDS_PAGE_SQL, WERE_PRUNED_SQL, type ArchivedBody, type ArchivedListEnd, type ReprocessStore,
} from '../reprocess-store.ts';
import { deferredSinceReads, LEDGER_SQL, otherJobsWithOperationReads } from '../ledger.ts';
import { apiCallReads } from '../api-calls.ts';
import { emptyPlanLedger, type PlanLedger, type PlannedTaskState } from '../plan-ledger.ts';
import { PG_DUE, pgRequestChanged, pgSharedAnswer } from './pg-ledger.ts';
import { pgValues } from '../../statement.ts';
import { pgStatement, readPg, rows, type Reads, type ReadStep } from '../read-steps.ts';
import { storeListEnd } from '../outcome-ops.ts';
import { ACCEPT_RAW_SQL } from '../raw-archive.ts';
import { openPgDataset } from '../readers/pg-dataset.ts';
import { checkPgReadQuery } from '../readers/read-only-sql.ts';
import { pgTableRowsSql } from '../readers/table-rows.ts';
import { createPgAnswerStore } from './pg-answer-store.ts';
import { openPgRunStore } from './pg-run-store.ts';
import { startPgStatement } from './pg-statement-rows.ts';
import { pruneRawBodiesPg } from './raw-prune.ts';
import { withPgReadSnapshot, type PgSnapshot } from './read-snapshot.ts';
import { READER_TYPES, STORE_TYPES } from './reader-values.ts';
import { pipelineStatements } from './pg-pipeline.ts';
import { inPgTransaction } from './transaction.ts';
import { holdExclusive } from './dataset-lock.ts';
import { redactDatabaseUrl } from './database-url.ts';
import { openPgForReading, openPgStore, pgReadOnlyError, usingPgStore, type PgStore } from './open.ts';

/** The store of the database at `url`; `shownUrl` is the URL as it may be printed (password hidden). */
export function pgDatasetStore(url: string, shownUrl: string): DatasetStore {
  return {
    shown: shownUrl,
    files: [],
    openRun: (options) => openPgRunStore({ ...options, url }),
    withPlanLedger: (fn) => withPgPlanLedger(url, fn),
    read: (fn, options = {}) =>
      inSnapshot(url, options.statementTimeoutMs, (snapshot) => fn({ ...snapshot, read: (reads) => readPg(snapshot, reads), readEach: (readers) => readEachPg(snapshot, readers) })),
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
 * timeout (it would only roll them back), under the dataset lock held exclusive (LockedError). A refusal says it was
 * `command` that was refused (the lock's own names it already).
 */
async function withPgMaintenance<T>(url: string, command: 'reprocess' | 'prune', fn: (store: PgStore) => Promise<T>) {
  const refused = (err: unknown) => commandRefusal(err, command);
  try {
    await (await openPgStore(url, { readOnly: true, maxConnections: 1 })).close();
  } catch (err) {
    if (err instanceof UsageError && err.code === 'DB_NOT_FOUND') {
      throw new UsageError(`no netingest dataset in ${redactDatabaseUrl(url)}: nothing to ${command} (see --db)`, 'DB_NOT_FOUND');
    }
    if (!(err instanceof DatabaseError && err.code === 'DB_NEEDS_MIGRATION')) throw refused(err);
  }
  // Two connections at most at once: the lock's, and the work's. Opening upgrades an older dataset, refused under workers.
  const opened = await openPgStore(url, { statementTimeoutMs: 0, maxConnections: 3 }).catch((err: unknown) => {
    throw refused(err);
  });
  return usingPgStore(opened, async (store) => {
    const hold = await holdExclusive(store.pool, store.shownUrl, `netingest ${command}`);
    try {
      return await fn(store);
    } catch (err) {
      // Opening writes nothing to a dataset already up to date: a read-only server is found at the first write.
      throw refused(pgReadOnlyError(err, store.shownUrl) ?? err);
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
    storeListEnd: (end) => readPg({ client }, storeListEnd(end)),
    savepoint: async () => void (await run('SAVEPOINT reprocess_body')),
    releaseSavepoint: async () => void (await run('RELEASE SAVEPOINT reprocess_body')),
    async rollbackToSavepoint() {
      await run('ROLLBACK TO SAVEPOINT reprocess_body');
      await run('RELEASE SAVEPOINT reprocess_body');
    },
    storeAnswer: async (input) => (await answers.store(client, input)).rows,
    acceptBody: async (rawId) => void (await run(ACCEPT_RAW_SQL.postgres, [rawId])),
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

/**
 * Each reader's answer in order, the readers run in lockstep in the snapshot: a round sends the next statement of each
 * not yet done in one round trip, so enrich's chunk of input rows costs its deepest reader's rounds, not a trip a statement.
 */
async function readEachPg<T>(snapshot: PgSnapshot, readers: readonly Reads<T>[]): Promise<T[]> {
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

/**
 * $1 job, $2 operation, $3 freshSince, $4 refresh, $5 other jobs (PG_DUE's and pgSharedAnswer's numbering);
 * $6, $7, $8 the planned tasks' input keys, pages and request texts. One row per planned task, in their order.
 */
const TASK_STATES = `SELECT CASE
    WHEN t.id IS NULL OR ${pgRequestChanged('t', 'p.request_json')} OR ${PG_DUE}
      THEN CASE WHEN EXISTS (SELECT 1 FROM tasks u WHERE ${pgSharedAnswer({ inputKey: 'p.input_key', page: 'p.page', operation: '$2', requestJson: 'p.request_json' })})
        THEN 'fresh' ELSE 'calls' END
    WHEN t.status = 'failed' THEN 'failedBefore'
    ELSE 'fresh' END AS state
  FROM (SELECT a.input_key, a.page, a.request_json::jsonb AS request_json, a.n
    FROM unnest($6::text[], $7::int[], $8::text[]) WITH ORDINALITY AS a(input_key, page, request_json, n)) p
  LEFT JOIN tasks t ON t.job = $1 AND t.input_key = p.input_key AND t.page = p.page
  ORDER BY p.n`;

/**
 * Runs `fn` with the plan ledger of the database at `url`, read-only (the analyst role can plan) in one snapshot; one
 * with no netingest schema plans as if nothing had run. Tasks are judged by the run's own rules (PG_DUE,
 * pgRequestChanged, pgSharedAnswer) in one statement, so plan and run cannot drift apart.
 */
async function withPgPlanLedger<T>(url: string, fn: (ledger: PlanLedger) => Promise<T>): Promise<T> {
  let store: PgStore;
  try {
    store = await openPgForReading(url);
  } catch (err) {
    // openPgStore's read-only refusal of an empty database: nothing to read, and plan creates nothing.
    if (!(err instanceof UsageError && err.code === 'DB_NOT_FOUND')) throw err;
    return fn(emptyPlanLedger(`no netingest dataset in ${redactDatabaseUrl(url)} yet: planned as if nothing had run (a run creates it)`));
  }
  return usingPgStore(store, ({ pool }) => withPgReadSnapshot(pool, (snapshot) => fn(pgPlanLedger(snapshot))));
}

function pgPlanLedger(snapshot: PgSnapshot): PlanLedger {
  return {
    nothingRan: null,
    otherJobs: (operation, job) => readPg(snapshot, otherJobsWithOperationReads(operation, job)),
    async taskStates(rule, tasks) {
      if (tasks.length === 0) return [];
      const { rows } = await snapshot.client.query<{ state: PlannedTaskState }>(TASK_STATES, [
        rule.job, rule.operation, rule.freshSince, rule.refresh, rule.others,
        tasks.map((t) => t.inputKey), tasks.map((t) => t.page), tasks.map((t) => t.requestJson),
      ]);
      return rows.map((r) => r.state);
    },
    learnedCost: (operation) => readPg(snapshot, apiCallReads.learnedCost(operation)),
    lastKnownBalance: async () => (await readPg(snapshot, apiCallReads.lastCounters()))?.balance ?? null,
    deferredSince: (job) => readPg(snapshot, deferredSinceReads(job)),
    now: async () => new Date((await snapshot.client.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]!.now).toISOString(),
  };
}
