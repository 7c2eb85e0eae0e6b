/**
 * The ordered writing loop of a parallel export: requests chunks (numbered 0..count-1) ahead of the writer, at
 * most `maxChunksInFlight` at a time, and writes their bytes strictly in order, waiting whenever the
 * destination pushes back. Memory is bounded by the chunks in flight, whatever the pace of the destination.
 */
import type { OutputSink } from './output-sink.ts';
import type { RowEncoder } from './row-encoders.ts';
import type { EncodedChunk } from './export-worker-pool.ts';
import { ExportInterruptedError, throwIfAborted } from './errors.ts';
import type { PumpOptions } from './export-options.ts';

/**
 * Options of pumpChunks(): the loop's (its signal stops it at once, even while it waits for a chunk or for the
 * destination; onProgress is called after each chunk) and the chunks requested but not yet written, at most.
 */
type PumpChunksOptions = Pick<PumpOptions, 'signal' | 'onProgress'> & { maxChunksInFlight: number };

/** Writes the encoder's header (with the first rows), then chunks 0..count-1 as `readChunk` delivers them (CSV or JSON Lines: no footer); the row count. */
export async function pumpChunks(
  readChunk: (seq: number) => Promise<EncodedChunk>,
  chunkCount: number,
  encoder: RowEncoder,
  sink: OutputSink,
  options: PumpChunksOptions,
): Promise<number> {
  const { maxChunksInFlight, signal, onProgress } = options;
  throwIfAborted(signal);
  // Held back until the first rows are ready, as in pumpRows(): a chunk that fails leaves no lone header on a pipe.
  let header = encoder.header();
  const writeHeader = async () => {
    const text = header;
    header = '';
    if (text) await untilAborted(sink.write(text), signal);
  };
  const inFlight: Promise<EncodedChunk>[] = [];
  let next = 0;
  let count = 0;
  while (next < chunkCount || inFlight.length > 0) {
    while (inFlight.length < maxChunksInFlight && next < chunkCount) {
      const chunk = readChunk(next++);
      // Observed now: a chunk that fails while earlier ones are being written must not be an unhandled rejection.
      chunk.catch(() => undefined);
      inFlight.push(chunk);
    }
    const chunk = await untilAborted(inFlight.shift()!, signal);
    if (chunk.bytes.length > 0) {
      await writeHeader();
      await untilAborted(sink.write(chunk.bytes, chunk.release), signal);
    } else {
      chunk.release();
    }
    count += chunk.rows;
    onProgress?.(count);
    throwIfAborted(signal);
  }
  await writeHeader();
  return count;
}

/** Waits for `wait` (if any), but rejects with ExportInterruptedError as soon as `signal` aborts. */
async function untilAborted<T>(wait: Promise<T> | T, signal: AbortSignal | undefined): Promise<T> {
  if (!(wait instanceof Promise) || signal === undefined) return wait;
  throwIfAborted(signal);
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new ExportInterruptedError());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([wait, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
