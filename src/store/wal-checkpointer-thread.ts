/**
 * The WAL checkpointer thread: its own connection, running PASSIVE checkpoints on a timer. A checkpoint
 * copies pages from the log into the database file and fsyncs both, which takes tens of milliseconds on
 * a slow disk; done by the connection that commits, it stalls every commit queued behind it. PASSIVE never
 * blocks the writer, and the writer's own (rarer) automatic checkpoint then finds the pages copied and synced
 * already. Failures are ignored: the writer's automatic checkpoint is the backstop.
 *
 * Messages in: `{ type: 'close' }`. Messages out: none.
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
