import type { Connection } from './connection.ts';
import type { RunLock } from './run-lock.ts';
import { startWorker } from '../threads/start.ts';
import { GroupCommitWriter } from './group-commit-writer.ts';
import { prepareOutcomeWrite, type OutcomeOp } from './outcome-ops.ts';
import { sqliteRefusal } from './connection.ts';

export const RESULT_WRITER_DEFAULTS = {
  /** Outcomes gathered at most before they are committed at once, without waiting for the loop's next turn. */
  maxBatch: 256,
  /**
   * WAL frames at which the connection checkpoints itself (SQLite's default 1000): only the backstop bounding the log
   * (64 MB) behind the checkpointer thread, as PASSIVE checkpoints never let a log written without pause start over.
   */
  walAutocheckpointPages: 16384,
  /** SQLite's own, set back when the writer closes. */
  walAutocheckpointPagesAfter: 1000,
  /** Time between two PASSIVE checkpoints of the checkpointer thread (startWalCheckpointer). */
  checkpointIntervalMs: 200,
  /** Calls handed over before the checkpointer thread starts: its ~100 ms of CPU a run of a few answers never wins back. */
  checkpointerAfterCalls: 256,
} as const;

/**
 * The SQLite writer, a group per IMMEDIATE transaction. The runner holds an outcome's slot till it commits, so a crash
 * loses at most `concurrency` answers, each repeated by the next run. Each commit checks the run's lock first
 * (RunLock.whileHeld), so a run suspended while another took it over stores nothing.
 */
export class ResultWriter extends GroupCommitWriter {
  private checkpointer: ReturnType<typeof startWalCheckpointer> | null = null;
  private readonly commit: (ops: readonly OutcomeOp[]) => void;

  constructor(
    private readonly database: Connection,
    runId: number,
    onFatal: (err: unknown) => void,
    /** The run's lock, checked in every commit; null writes without the check. */
    lock: Pick<RunLock, 'whileHeld'> | null = null,
    maxBatch: number = RESULT_WRITER_DEFAULTS.maxBatch,
  ) {
    super(runId, onFatal, maxBatch);
    const write = prepareOutcomeWrite(database, runId);
    const writeAll = (ops: readonly OutcomeOp[]) => {
      for (const op of ops) write(op);
    };
    const transaction = database.sqlite.transaction(writeAll);
    this.commit = lock ? (ops) => lock.whileHeld(() => writeAll(ops)) : (ops) => transaction.immediate(ops);
  }

  /** Commits what is gathered now; resolves once everything enqueued so far is committed (or the writer failed). */
  async drain(): Promise<void> {
    this.flush();
  }

  /** Commits what is left and stops the checkpointer thread. */
  async close(): Promise<void> {
    this.flush();
    await this.checkpointer?.close();
    if (this.database.sqlite.open) this.database.sqlite.pragma(`wal_autocheckpoint = ${RESULT_WRITER_DEFAULTS.walAutocheckpointPagesAfter}`);
  }

  /** One IMMEDIATE transaction, at once, on the run's own connection; a group refused on a value, in parts (refusedAlone). */
  protected commitGroup(ops: readonly OutcomeOp[], release: () => void): void {
    const todo: Array<readonly OutcomeOp[]> = [ops];
    for (let group = todo.shift(); group; group = todo.shift()) {
      try {
        this.commit(group);
        this.committed(group);
      } catch (err) {
        const parts = this.refusedAlone(group, err);
        if (!parts) {
          this.fail(err);
          break;
        }
        todo.unshift(...parts);
      }
    }
    release();
    this.checkpointOnceWorthIt();
  }

  protected refusal(err: unknown): string | null {
    return sqliteRefusal(err);
  }

  /** Hands the checkpoints to their thread once the run has written enough for them to stall its commits. */
  private checkpointOnceWorthIt(): void {
    if (this.checkpointer || this.error || this.calls < RESULT_WRITER_DEFAULTS.checkpointerAfterCalls) return;
    try {
      this.checkpointer = startWalCheckpointer(this.database.file);
      this.database.sqlite.pragma(`wal_autocheckpoint = ${RESULT_WRITER_DEFAULTS.walAutocheckpointPages}`);
    } catch {
      // Only speed is lost, never a commit (this runs after them): SQLite goes on checkpointing on its own.
    }
  }
}

const CHECKPOINTER_THREAD = new URL('./wal-checkpointer-thread.ts', import.meta.url);

/** PASSIVE checkpoints of `dbFile` every `intervalMs` from a thread of its own; close() waits for the thread to end. */
export function startWalCheckpointer(dbFile: string, intervalMs: number = RESULT_WRITER_DEFAULTS.checkpointIntervalMs) {
  const worker = startWorker(CHECKPOINTER_THREAD, { dbFile, intervalMs });
  // A checkpointer that cannot start or fails costs only speed: the writer checkpoints on its own.
  worker.on('error', () => undefined);
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  // Never what keeps a process alive, except while close() waits for it (an unref'd thread being awaited
  // would let the event loop empty under the waiter).
  worker.unref();
  return {
    async close(): Promise<void> {
      worker.ref();
      worker.postMessage({ type: 'close' });
      await exited;
    },
  };
}
