/**
 * The run's writer thread: its own connection to the dataset, where every outcome is filed, one transaction
 * per batch received (the run gathers outcomes while a batch commits: see ResultWriter), so the SQLite work,
 * WAL checkpoints included, stays off the thread that drives the HTTP calls.
 *
 * Messages in: `{ type: 'write', seq, ops }`, `{ type: 'close' }`.
 * Messages out: `{ type: 'ready' }`, `{ type: 'committed', seq }` (every batch up to seq is durable in the
 * WAL), `{ type: 'failed', error }` (nothing after it is written).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openConnection, type Connection } from '../store/connection.ts';
import { lockCheck, lockLostError } from '../store/run-lock.ts';
import { createOutcomeApplier, type OutcomeOp } from './outcome-ops.ts';
import { serializeError, type WriterThreadData, type WriterMessageIn, type WriterMessageOut } from './result-writer-protocol.ts';

/** Settings of the writer's connection. */
const WRITER_DEFAULTS = {
  /** Frames in the write-ahead log at which this connection checkpoints by itself (SQLite's default: 1000). */
  walAutocheckpointPages: 16384,
} as const;

const port = parentPort!;
const { dbFile, runId, lock } = (workerData as { data: WriterThreadData }).data;
const send = (message: WriterMessageOut) => port.postMessage(message);

let database: Connection | null = null;
let apply: ((ops: readonly OutcomeOp[]) => void) | null = null;
let failed = false;

function commit(ops: readonly OutcomeOp[], seq: number): void {
  try {
    apply!(ops);
  } catch (err) {
    fail(err);
    return;
  }
  send({ type: 'committed', seq });
}

function fail(err: unknown): void {
  failed = true;
  send({ type: 'failed', error: serializeError(err) });
}

function close(): void {
  try {
    database?.close();
  } catch (err) {
    if (!failed) fail(err);
  }
  port.close();
}

try {
  // The run opened (and migrated) the dataset before starting this thread: a plain connection is enough.
  database = openConnection(dbFile);
  // Checkpoints are the WAL checkpointer thread's job (store/wal-checkpointer.ts): this connection's own
  // automatic checkpoint is only the backstop that bounds the log (64 MB), since a log written without pause
  // is never fully copied by PASSIVE checkpoints and so never starts over. The log file keeps its size between
  // checkpoints (no journal_size_limit): growing it again after each truncation cost metadata writes that
  // queued behind the checkpointer's fsyncs and stalled commits (measured: 0.45 s of stalls per 20,000
  // answers instead of 0.9 s).
  database.sqlite.pragma(`wal_autocheckpoint = ${WRITER_DEFAULTS.walAutocheckpointPages}`);
  apply = lockGuarded(database, createOutcomeApplier(database, runId));
  send({ type: 'ready' });
} catch (err) {
  fail(err);
}

/**
 * With the run's lock: each batch in one IMMEDIATE transaction that first checks the lock is still the run's,
 * so a run suspended while another took the lock over stores nothing when it wakes up (the check and the
 * commit cannot be split by a takeover, which is a write transaction too).
 */
function lockGuarded(connection: Connection, write: (ops: readonly OutcomeOp[]) => void): (ops: readonly OutcomeOp[]) => void {
  if (!lock) return write;
  const ours = lockCheck(connection.sqlite, lock);
  const guarded = connection.sqlite.transaction((ops: readonly OutcomeOp[]) => {
    if (!ours()) throw lockLostError(connection.sqlite, dbFile, runId);
    write(ops);
  });
  return (ops) => guarded.immediate(ops);
}

port.on('message', (message: WriterMessageIn) => {
  if (message.type === 'close') {
    close();
    return;
  }
  if (!failed) commit(message.ops, message.seq);
});
