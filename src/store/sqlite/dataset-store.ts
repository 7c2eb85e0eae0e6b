/**
 * The dataset store of a SQLite file: each method opens the file as its command needs (read-write and locked for a
 * run, reprocess and prune; read-only for readers), works synchronously with better-sqlite3, and closes it.
 */
import { existsSync, statSync } from 'node:fs';
import { UsageError } from '../../errors.ts';
import { commandRefusal, usingStatement, WRITE_META_SQL, type DatasetStore, type StorePruneOptions, type StorePruneResult } from '../dataset-store.ts';
import { openDatabase, openForReading, type Database } from '../open.ts';
import { emptyPlanLedger, type PlanLedger, type PlannedTask, type PlanRule } from '../plan-ledger.ts';
import { createLedger, type Ledger } from '../ledger.ts';
import { apiCallReads } from '../api-calls.ts';
import { pruneRawBodies } from '../raw-prune.ts';
import { withReadSnapshot } from '../read-snapshot.ts';
import { readSync, rows } from '../read-steps.ts';
import { acquireRunLock } from '../run-lock.ts';
import { prepareAnswerStore, storeListEnd } from '../outcome-ops.ts';
import { clearNormalizedTables } from '../ingest/index.ts';
import { ACCEPT_RAW_SQL } from '../raw-archive.ts';
import {
  ARCHIVE_PAGE_SQL, CLEAR_KEPT_ANOMALIES_SQL, LIST_ENDS_PAGE_SQL, WERE_PRUNED_SQL, type ArchivedBody, type ArchivedListEnd, type ReprocessStore,
} from '../reprocess-store.ts';
import { openSqliteRunStore } from '../sqlite-run-store.ts';
import { openSqliteDataset } from '../readers/dataset.ts';
import { asQueryError, prepareReadQuery } from '../readers/read-only-sql.ts';
import { rowCount, rowidBounds, tableRows } from '../readers/table-rows.ts';
import { statementRows } from './statement-rows.ts';

/** SQLite's own files beside a database file: a `--db` naming one (a tab completion too far) is a mistake. */
const SIDE_FILE = /-(wal|shm|journal)$/;

/**
 * Refuses the -wal, -shm or -journal file of an existing database: a run would write a dataset into it, paid for,
 * that the database's next writer deletes with its own side file.
 */
function assertNotSideFile(file: string): void {
  const side = SIDE_FILE.exec(file);
  const database = side ? file.slice(0, side.index) : '';
  if (side && existsSync(database)) {
    throw new UsageError(`--db ${file} is the ${side[1]} file SQLite keeps beside the database ${database}, not a database: give --db ${database}`, 'DB_SIDE_FILE');
  }
}

/** The store of the SQLite dataset in `file` (a normalized path; nothing is opened yet). */
export function sqliteDatasetStore(file: string): DatasetStore {
  assertNotSideFile(file);
  return {
    shown: file,
    files: [file],
    openRun: async ({ leaseMs }) => openSqliteRunStore(file, leaseMs),
    withPlanLedger: async (fn) =>
      existsSync(file) ? reading(file, (database) => withReadSnapshot(database, () => fn(sqlitePlanLedger(database)))) : fn(emptyPlanLedger(null)),
    read: (fn) =>
      reading(file, (database) =>
        withReadSnapshot(database, (snapshot) =>
          fn({ ...snapshot, read: async (reads) => readSync(snapshot.sqlite, reads), readEach: async (readers) => readers.map((reads) => readSync(snapshot.sqlite, reads)) }),
        ),
      ),
    userStatement: (options, use) =>
      reading(file, (database) =>
        withReadSnapshot(database, async (snapshot) => {
          // Checked and described here; its rows come from a child process that can be stopped (statement-rows.ts).
          const columns = prepareReadQuery(snapshot.sqlite, options.sql).columns().map((c) => c.name);
          const rows = statementRows({ db: snapshot.file, sql: options.sql, signal: options.signal, timeoutMs: options.timeoutMs });
          return usingStatement({ columns, rows, close: async () => void (await rows.return(undefined)) }, snapshot, use);
        }).catch((err: unknown) => Promise.reject(asQueryError(err))),
      ),
    tableRows: (query, _options, use) =>
      reading(file, (database) =>
        withReadSnapshot(database, (snapshot) => {
          const { columns, rows } = tableRows(snapshot, query);
          // A table's rowid ranges, for a reader that reads them in parallel on connections of its own, which wait for
          // a lock as long as the snapshot's connection does.
          const busyTimeoutMs = snapshot.sqlite.pragma('busy_timeout', { simple: true }) as number;
          const chunks =
            query.kind === 'table'
              ? {
                  source: { db: snapshot.file, table: query.table, since: query.since, busyTimeoutMs },
                  bounds: () => rowidBounds(snapshot, query.table),
                  count: () => rowCount(snapshot, query.table),
                }
              : undefined;
          return use({ columns, rows, chunks }, snapshot);
        }),
      ),
    reprocess: async (replay) => {
      if (!existsSync(file)) throw new UsageError(`no database at ${file}: nothing to reprocess (see --db)`);
      return locked(file, 'reprocess', (database) => inSqliteReprocessTransaction(database, replay));
    },
    prune: async (options) => prune(file, options),
    openDataset: async () => openSqliteDataset(file),
    writeMeta: async (key, value) => {
      if (!existsSync(file)) throw new UsageError(`no database at ${file}: nothing has run yet (see --db)`, 'DB_NOT_FOUND');
      await closing(openDatabase(file), (database) => readSync(database.sqlite, rows(WRITE_META_SQL, [key, value])));
    },
  };
}

/** Runs `fn` on `database`, then closes it. */
async function closing<T>(database: Database, fn: (database: Database) => T | Promise<T>): Promise<T> {
  try {
    return await fn(database);
  } finally {
    database.close();
  }
}

/** Opens `file` for reading only (it must exist), runs `fn`, closes it. */
const reading = async <T>(file: string, fn: (database: Database) => Promise<T>): Promise<T> => closing(openForReading(file), fn);

/**
 * Opens `file` for writing under its run lock (LockedError while a run holds it), runs `fn`, closes it. A refusal says
 * it was `command` that was refused, as on PostgreSQL.
 */
async function locked<T>(file: string, command: 'reprocess' | 'prune', fn: (database: Database) => T | Promise<T>): Promise<T> {
  try {
    return await closing(openDatabase(file), async (database) => {
      // A run writing at the same time would interleave with the work: take the run lock as a run does.
      const lock = acquireRunLock(database);
      try {
        return await fn(database);
      } finally {
        lock.release();
      }
    });
  } catch (err) {
    throw commandRefusal(err, command);
  }
}

/** `plan`'s ledger: the ledger's own dueState and hasSharedAnswer, task by task (in process: no round trip to save). */
function sqlitePlanLedger(database: Database): PlanLedger {
  const ledger = createLedger(database);
  return {
    nothingRan: null,
    otherJobs: (operation, job) => Promise.resolve(ledger.otherJobs(operation, job)),
    taskStates: (rule, tasks) => Promise.resolve(tasks.map((task) => plannedState(ledger, rule, task))),
    learnedCost: (operation) => Promise.resolve(readSync(database.sqlite, apiCallReads.learnedCost(operation))),
    lastKnownBalance: () => Promise.resolve(readSync(database.sqlite, apiCallReads.lastCounters())?.balance ?? null),
    deferredSince: (job) => Promise.resolve(ledger.deferredSince(job)),
  };
}

/** How a run starting now takes the task: fresh, failed for good, or due (unless another job answered it). */
function plannedState(ledger: Ledger, rule: PlanRule, task: PlannedTask) {
  const state = ledger.dueState(rule, task);
  if (state === 'fresh') return 'fresh';
  if (state === 'failed') return 'failedBefore';
  const lookup = { operation: rule.operation, ...task };
  return ledger.hasSharedAnswer(lookup, rule.others, rule.freshSince) ? 'fresh' : 'calls';
}

/**
 * Runs `replay` in one transaction, bodies stored as the run's writer stores them: all kept or none (the caller holds
 * the run lock). The store answers at once, so nothing else runs between BEGIN and COMMIT.
 */
export async function inSqliteReprocessTransaction<T>(database: Database, replay: (store: ReprocessStore) => Promise<T>): Promise<T> {
  const { sqlite } = database;
  const storeAnswer = prepareAnswerStore(database);
  const ledger = createLedger(database);
  // Keyset pages instead of one iterate(): better-sqlite3 refuses other statements on a connection while an
  // iterator is open, and the replay writes on this connection.
  const page = sqlite.prepare(ARCHIVE_PAGE_SQL.sqlite);
  const clearAnomalies = sqlite.prepare(CLEAR_KEPT_ANOMALIES_SQL);
  const listEnds = sqlite.prepare(LIST_ENDS_PAGE_SQL.sqlite);
  const accept = sqlite.prepare(ACCEPT_RAW_SQL.sqlite);
  const store: ReprocessStore = {
    bodiesWerePruned: () => sqlite.prepare(WERE_PRUNED_SQL).get() !== undefined,
    clearNormalizedTables: () => clearNormalizedTables(database),
    clearKeptBodiesAnomalies: () => void clearAnomalies.run(),
    archivePage: (afterId, limit) => page.all(afterId, limit) as ArchivedBody[],
    listEndsPage: (afterId, limit) => listEnds.all(afterId, limit) as ArchivedListEnd[],
    storeListEnd: (end) => readSync(sqlite, storeListEnd(end)),
    savepoint: () => void sqlite.exec('SAVEPOINT reprocess_body'),
    releaseSavepoint: () => void sqlite.exec('RELEASE reprocess_body'),
    rollbackToSavepoint: () => void sqlite.exec('ROLLBACK TO reprocess_body; RELEASE reprocess_body'),
    storeAnswer: (input) => storeAnswer(input).rows,
    acceptBody: (rawId) => void accept.run(rawId),
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

async function prune(file: string, { keepDays, dryRun, vacuum }: StorePruneOptions): Promise<StorePruneResult> {
  if (!existsSync(file)) throw new UsageError(`no database at ${file}: nothing to prune (see --db)`);
  const bytesBefore = statSync(file).size;
  const report = await locked(file, 'prune', (database) => {
    const found = pruneRawBodies(database, { keepDays, dryRun, compressOld: true });
    if (vacuum && !dryRun && (found.dropped > 0 || found.compressed > 0)) database.sqlite.exec('VACUUM');
    return found;
  });
  // Measured once the connection is closed: closing checkpoints the WAL into the file.
  const bytesAfter = statSync(file).size;
  const withFile = { ...report, fileBytesBefore: bytesBefore, fileBytesAfter: bytesAfter };
  return { report: withFile, space: { what: 'Database file', bytesBefore, bytesAfter, note: '' } };
}
