/**
 * The messages between the run and its writer thread, and how an error crosses between them: a thread can
 * only send plain data, so a database error is rebuilt on arrival with its class and code, for the run to
 * report it as it would have reported it from its own connection.
 */
import { DatabaseError, type DatabaseErrorCode } from '../store/errors.ts';
import { LockLostError, type RunLockHolding } from '../store/run-lock.ts';
import type { OutcomeOp } from './outcome-ops.ts';

/** What the writer thread is started with. */
export interface WriterThreadData {
  dbFile: string;
  runId: number;
  /** The run's lock, checked in each commit: a run whose lock was taken over commits nothing more. */
  lock: RunLockHolding | null;
}

export type WriterMessageIn = { type: 'write'; seq: number; ops: OutcomeOp[] } | { type: 'close' };

export type WriterMessageOut =
  | { type: 'ready' }
  | { type: 'committed'; seq: number }
  | { type: 'failed'; error: SerializedError };

/** An error as plain data. */
export interface SerializedError {
  message: string;
  code: string | null;
  /** Set when the error was a DatabaseError: the file it names. */
  databaseFile: string | null;
}

/** Turns an error into plain data. */
export function serializeError(err: unknown): SerializedError {
  const code = (err as { code?: unknown } | null)?.code;
  return {
    message: err instanceof Error ? err.message : String(err),
    code: typeof code === 'string' ? code : null,
    databaseFile: err instanceof DatabaseError ? err.file : null,
  };
}

/** The error again, as a DatabaseError or an Error carrying SQLite's code. */
export function deserializeError(e: SerializedError): Error {
  if (e.code === 'LOCK_LOST') return new LockLostError(e.message);
  if (e.databaseFile !== null && e.code !== null) return new DatabaseError(e.code as DatabaseErrorCode, e.databaseFile, e.message);
  return Object.assign(new Error(e.message), e.code === null ? {} : { code: e.code });
}
