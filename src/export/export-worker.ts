/** A parallel export's worker: reads chunks from its own snapshot and answers each `read` with UTF-8 bytes. */
import { parentPort, workerData } from 'node:worker_threads';
import { openChunkReader } from '../store/readers/table-rows.ts';
import { encoderFor } from './row-encoders.ts';
import type { ExportWorkerData, ExportWorkerMessage, ToExportWorkerMessage } from './export-worker-protocol.ts';
import { Utf8Accumulator } from './utf8-accumulator.ts';

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
  const chunks = openChunkReader(data.source);
  const encoder = encoderFor(data.format, data.columns, { escapeFormulas: data.escapeFormulas });
  const bytes = new Utf8Accumulator();
  port.on('message', (message: ToExportWorkerMessage) => {
    if (message.type === 'recycle') {
      bytes.recycle(message.buffer);
      return;
    }
    try {
      let rows = 0;
      let batch: unknown[][] = [];
      let batchChars = 0;
      const flush = () => {
        bytes.append(encoder.encode(batch));
        rows += batch.length;
        batch = [];
        batchChars = 0;
      };
      // A small batch at a time: few rows reach the old generation, and the capped heap holds one batch at most.
      chunks.read(message.fromRowid, message.toRowid, (row) => {
        batch.push(row);
        for (const value of row) if (typeof value === 'string') batchChars += value.length;
        if (batch.length >= data.batchRows || batchChars >= data.batchChars) flush();
      });
      if (batch.length > 0) flush();
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
