/**
 * A worker thread of a parallel table export (see parallel-table-export.ts): opens its own read-only
 * connection, holds one read transaction for its whole life so that every chunk it reads comes from the same
 * snapshot, and answers each `read` message with the chunk's rows encoded as UTF-8 bytes.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openConnection } from '../store/connection.ts';
import { holdReadSnapshot } from '../store/read-snapshot.ts';
import { lockConnectionReadOnly } from './read-only-sql.ts';
import { encoderFor } from './row-encoders.ts';
import type { ExportWorkerData, ExportWorkerMessage, ToExportWorkerMessage } from './export-worker-protocol.ts';
import { Utf8Accumulator } from './utf8-accumulator.ts';

/** SQLite page cache of a worker's connection (the default is 16 MB per connection). */
const WORKER_CACHE_KIB = 2048;

// Started by startWorker() (src/threads), which hands the data on as workerData.data.
const data = (workerData as { data: ExportWorkerData }).data;
const port = parentPort!;

function post(message: ExportWorkerMessage, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

function fail(err: unknown): void {
  const code = (err as { code?: unknown })?.code;
  post({ type: 'failed', message: err instanceof Error ? err.message : String(err), code: typeof code === 'string' ? code : undefined });
  port.close();
}

try {
  // Not openForReading(): the main thread has already checked the file and its schema, and a worker that
  // loads no drizzle starts faster and holds less memory. openConnection() all the same, for the way it reads a
  // database whose folder this user cannot write (without -shm, watching for a writer: read-without-shm.ts).
  const connection = openConnection(data.db, { readonly: true, busyTimeoutMs: data.busyTimeoutMs });
  const { sqlite } = connection;
  lockConnectionReadOnly(sqlite);
  // Chunks are read once, in rowid order: a page cache beyond the b-tree's upper levels would only cost memory.
  sqlite.pragma(`cache_size = -${WORKER_CACHE_KIB}`);
  // From here on this connection sees the database as it is now, until the worker ends.
  const snapshot = holdReadSnapshot(connection);
  const stmt = sqlite.prepare(data.sql).raw(true);
  const encoder = encoderFor(data.format, data.columns, { escapeFormulas: data.escapeFormulas });
  const bytes = new Utf8Accumulator();
  port.on('message', (message: ToExportWorkerMessage) => {
    if (message.type === 'recycle') {
      bytes.recycle(message.buffer);
      return;
    }
    try {
      const params: unknown[] = [message.fromRowid, message.toRowid];
      if (data.since !== undefined) params.push(data.since);
      let rows = 0;
      let batch: unknown[][] = [];
      let batchChars = 0;
      const flush = () => {
        bytes.append(encoder.encode(batch));
        rows += batch.length;
        batch = [];
        batchChars = 0;
      };
      // Checked before the rows leave: a database read without locks that changed meanwhile may have given wrong ones.
      snapshot.read(() => {
        // Encoded as they come, a small batch at a time: few rows survive into the old generation, and the heap
        // (capped, see parallel-table-export.ts) holds one batch whatever the size of the rows.
        for (const row of stmt.iterate(...params) as IterableIterator<unknown[]>) {
          batch.push(row);
          for (const value of row) if (typeof value === 'string') batchChars += value.length;
          if (batch.length >= data.batchRows || batchChars >= data.batchChars) flush();
        }
        if (batch.length > 0) flush();
      });
      const { buffer, length } = bytes.take();
      post({ type: 'chunk', seq: message.seq, rows, buffer, length }, [buffer]);
    } catch (err) {
      fail(err);
    }
  });
  post({ type: 'ready' });
} catch (err) {
  fail(err);
}
