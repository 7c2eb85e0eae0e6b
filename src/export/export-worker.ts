/** A parallel export's worker: reads chunks from its own snapshot and answers each `read` with UTF-8 bytes. */
import { parentPort, workerData } from 'node:worker_threads';
import { openChunkReader } from '../store/readers/table-rows.ts';
import { encoderFor } from './row-encoders.ts';
import type { ExportWorkerData, ExportWorkerMessage, ToExportWorkerMessage } from './export-worker-protocol.ts';

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

/** Largest UTF-8 length of one UTF-16 code unit (a surrogate pair is 4 bytes for 2 units). */
const MAX_BYTES_PER_UNIT = 3;

/**
 * Gathers strings as UTF-8 bytes in a buffer handed out whole (transferred, not copied). Buffers given back are reused,
 * so live buffers are bounded by the chunks in flight rather than by the main thread's rare GC.
 */
class Utf8Accumulator {
  private readonly encoder = new TextEncoder();
  private readonly free: ArrayBuffer[] = [];
  private scratch = new Uint8Array(1 << 20);
  private used = 0;

  append(text: string): void {
    const needed = this.used + text.length * MAX_BYTES_PER_UNIT;
    if (needed > this.scratch.length) {
      const grown = new Uint8Array(Math.max(needed, this.scratch.length * 2));
      grown.set(this.scratch.subarray(0, this.used));
      this.scratch = grown;
    }
    this.used += this.encoder.encodeInto(text, this.scratch.subarray(this.used)).written;
  }

  /** The bytes appended since the last take(): the first `length` bytes of `buffer`, which now belongs to the caller. */
  take(): { buffer: ArrayBuffer; length: number } {
    const taken = { buffer: this.scratch.buffer as ArrayBuffer, length: this.used };
    // A new buffer as large as the last one: a chunk that needed to grow it says how large chunks are.
    this.scratch = new Uint8Array(this.free.pop() ?? new ArrayBuffer(this.scratch.length));
    this.used = 0;
    return taken;
  }

  /** A buffer from take() given back for reuse. */
  recycle(buffer: ArrayBuffer): void {
    this.free.push(buffer);
  }
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
