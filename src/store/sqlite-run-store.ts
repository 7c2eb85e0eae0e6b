/** The run store on SQLite (run-store.ts's ports): every ledger write and the run's end check the one-run lock in their transaction. */
import { CreditGuard } from '../credits/credit-guard.ts';
import { RateGate } from '../rate/rate-gate.ts';
import { ResultWriter } from './result-writer.ts';
import { anomalyCountsReads } from './answer-anomalies.ts';
import { saveAnswerDrift } from './answer-drift.ts';
import { callHistory } from './api-calls.ts';
import { createLedger, type Ledger, type RunnableFilter, type TaskRow } from './ledger.ts';
import { openDatabase, toDatabaseUseError } from './open.ts';
import { pruneRawBodies } from './raw-prune.ts';
import { acquireRunLock, type RunLock } from './run-lock.ts';
import type { DueTasks, RunStore } from './run-store.ts';
import { createRunLog } from './runs.ts';
import { readSync } from './read-steps.ts';

/** Opens the SQLite dataset at `file` and takes its run lock for `leaseMs` (LockedError while a live run holds it). */
export function openSqliteRunStore(file: string, leaseMs: number | undefined): RunStore {
  const database = openDatabase(file);
  try {
    const lock = acquireRunLock(database, leaseMs);
    const runs = createRunLog(database);
    const ledger = lockGuardedLedger(createLedger(database), lock);
    return {
      name: database.file,
      ledger,
      runs: {
        start(run) {
          const id = runs.start(run);
          return { id, runKey: run.sharedRunKey ?? `run-${id}` };
        },
        end: (runId, fields) => lock.whileHeld(() => runs.end(runId, fields)),
      },
      calls: callHistory((reads) => readSync(database.sqlite, reads)),
      hold: lock,
      dueTasks: (filter) => pagedDueTasks(ledger, filter),
      // Its lock is checked in every commit: a run whose lock was taken over stores nothing.
      openWriter: (runId, onFatal) => new ResultWriter(database, runId, onFatal, lock),
      openGate: () => new RateGate({ requestsPerMinute: null }),
      openCreditGuard: (limits, history) => new CreditGuard(limits, history),
      saveDrift: saveAnswerDrift(database),
      anomalyCounts: (runId, job) => readSync(database.sqlite, anomalyCountsReads(runId, job)),
      pruneJobBodies: (job, keepDays) => pruneRawBodies(database, { keepDays, jobs: [job] }),
      describeError: (err) => toDatabaseUseError(err, database.file),
      close: () => database.close(),
    };
  } catch (err) {
    database.close();
    throw toDatabaseUseError(err, database.file);
  }
}

/** The run holds the one lock: its due tasks are the ledger's, paged after the last id read. */
function pagedDueTasks(ledger: Pick<Ledger, 'runnableAfter'>, filter: RunnableFilter): DueTasks {
  let afterId = 0;
  return {
    wholeInputs: false,
    next(limit: number): TaskRow[] {
      const rows = ledger.runnableAfter(filter, afterId, limit);
      if (rows.length > 0) afterId = rows[rows.length - 1]!.id;
      return rows;
    },
    settled: () => undefined,
    close: () => undefined,
  };
}

/** The ledger, each write checking the run lock in its transaction: a run taken over writes no task (LockLostError). */
function lockGuardedLedger(ledger: Ledger, lock: Pick<RunLock, 'whileHeld'>): Ledger {
  return {
    ...ledger,
    insertPlanned: (...args) => lock.whileHeld(() => ledger.insertPlanned(...args)),
    dropStaleInvalid: (...args) => lock.whileHeld(() => ledger.dropStaleInvalid(...args)),
    adoptSharedAnswers: (...args) => lock.whileHeld(() => ledger.adoptSharedAnswers(...args)),
    reopenDue: (...args) => lock.whileHeld(() => ledger.reopenDue(...args)),
    deferPending: (...args) => lock.whileHeld(() => ledger.deferPending(...args)),
  };
}
