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
import { openConnection, type Connection } from '../db/connection.ts';
import { createOutcomeApplier, type OutcomeOp } from './outcome-ops.ts';
import { serializeError, type WriterThreadData, type WriterMessageIn, type WriterMessageOut } from './result-writer-protocol.ts';

/** Settings of the writer's connection. */
const WRITER_DEFAULTS = {
  /** Frames in the write-ahead log that trigger a checkpoint (SQLite's default is 1000). */
  walAutocheckpointPages: 4096,
  /** Size the log file is truncated back to after a checkpoint. */
  walSizeLimitBytes: 32 * 1024 * 1024,
} as const;

const port = parentPort!;
const { dbFile, runId } = (workerData as { data: WriterThreadData }).data;
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
  // A checkpoint copies the latest version of each page the log holds; a busy run rewrites the same leaf
  // pages hundreds of times a second, so checkpointing every 4096 frames instead of SQLite's 1000 copies
  // each far fewer times (and pays its two fsyncs a quarter as often). journal_size_limit gives the disk
  // back after a checkpoint.
  database.sqlite.pragma(`wal_autocheckpoint = ${WRITER_DEFAULTS.walAutocheckpointPages}`);
  database.sqlite.pragma(`journal_size_limit = ${WRITER_DEFAULTS.walSizeLimitBytes}`);
  apply = createOutcomeApplier(database, runId);
  send({ type: 'ready' });
} catch (err) {
  fail(err);
}

port.on('message', (message: WriterMessageIn) => {
  if (message.type === 'close') {
    close();
    return;
  }
  if (!failed) commit(message.ops, message.seq);
});
