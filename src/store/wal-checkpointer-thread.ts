/**
 * PASSIVE checkpoints on a connection of its own (any message stops them): on the committing connection a checkpoint's
 * fsyncs would stall every commit behind it. Failures are ignored: the writer's automatic checkpoint is the backstop.
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
