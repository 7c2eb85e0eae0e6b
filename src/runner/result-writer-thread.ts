/**
 * The run's writer thread: its own connection to the dataset, where every outcome is filed. Batches that
 * arrive while a commit is under way are committed together on the next turn (group commit), and the SQLite
 * work, WAL checkpoints included, stays off the thread that drives the HTTP calls.
 *
 * Messages in: `{ type: 'write', seq, ops }`, `{ type: 'close' }`.
 * Messages out: `{ type: 'ready' }`, `{ type: 'committed', seq }` (every batch up to seq is durable in the
 * WAL), `{ type: 'failed', error }` (nothing after it is written).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase, type Database } from '../db/open.ts';
import { createOutcomeApplier, type OutcomeOp } from './outcome-ops.ts';
import { serializeError, type WriterThreadData, type WriterMessageIn, type WriterMessageOut } from './result-writer-protocol.ts';

const port = parentPort!;
const { dbFile, runId } = (workerData as { data: WriterThreadData }).data;
const send = (message: WriterMessageOut) => port.postMessage(message);

let database: Database | null = null;
let apply: ((ops: readonly OutcomeOp[]) => void) | null = null;
let pending: OutcomeOp[] = [];
let pendingSeq = 0;
let scheduled = false;
let failed = false;

function commit(): void {
  scheduled = false;
  if (failed || pending.length === 0) return;
  const ops = pending;
  pending = [];
  try {
    apply!(ops);
  } catch (err) {
    fail(err);
    return;
  }
  send({ type: 'committed', seq: pendingSeq });
}

function fail(err: unknown): void {
  failed = true;
  pending = [];
  send({ type: 'failed', error: serializeError(err) });
}

function close(): void {
  commit();
  try {
    database?.close();
  } catch (err) {
    if (!failed) fail(err);
  }
  port.close();
}

try {
  database = openDatabase(dbFile);
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
  if (failed) return;
  for (const op of message.ops) pending.push(op);
  pendingSeq = message.seq;
  if (!scheduled) {
    scheduled = true;
    setImmediate(commit);
  }
});
