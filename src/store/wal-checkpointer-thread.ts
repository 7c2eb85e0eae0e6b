/**
 * The WAL checkpointer thread: its own connection, PASSIVE checkpoints on a timer (any message stops it). Done by the
 * committing connection, a checkpoint's fsyncs would stall every commit queued behind; PASSIVE never blocks the writer,
 * whose rarer automatic checkpoint (the backstop: failures here are ignored) then finds the pages synced already.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openConnection, type Connection } from './connection.ts';

const port = parentPort!;
const { dbFile, intervalMs } = (workerData as { data: { dbFile: string; intervalMs: number } }).data;

let connection: Connection | null = null;
try {
  connection = openConnection(dbFile, { busyTimeoutMs: 0 });
} catch {
  // Nothing to do without a connection; the writer checkpoints on its own.
}

const timer = setInterval(() => {
  try {
    connection?.sqlite.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or failing: the next tick, or the writer, will do it.
  }
}, intervalMs);

port.on('message', () => {
  clearInterval(timer);
  try {
    connection?.close();
  } catch {
    // Closing a read connection cannot lose anything.
  }
  port.close();
});
