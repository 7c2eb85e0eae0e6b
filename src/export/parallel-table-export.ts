/**
 * A table export over worker threads (reading and encoding are both single-threaded CPU work). The rowid range, fixed
 * at the start, is cut into chunks; each worker reads them in one read transaction and encodes them with the same
 * RowEncoder; the main thread writes them in chunk order, so the bytes match the main-thread path's.
 */
import { toDatabaseUseError } from '../store/open.ts';
import { DatabaseChangedError } from '../store/errors.ts';
import type { ChunkedTable } from '../store/dataset-store.ts';
import { ExportWorkerError, ExportWorkerPool } from './export-worker-pool.ts';
import type { ExportWorkerData } from './export-worker-protocol.ts';
import type { ParallelExportOptions } from './export-options.ts';
import { untilAborted, type OutputPiece } from './write-output.ts';

/** The rowid range to export in parallel (fixed when the export starts), or null to export on the main thread. */
export function parallelRowidRange(table: ChunkedTable, { workers, minRowidSpan, maxRowidsPerRow }: Required<ParallelExportOptions>) {
  if (workers < 2) return null;
  const bounds = table.bounds();
  if (bounds === null) return null;
  const { first, last } = bounds;
  // Chunk bounds are JS numbers: rowids beyond 2^53 (never SQLite's own) stay exact on the main-thread path.
  const limit = BigInt(Number.MAX_SAFE_INTEGER);
  const span = last - first + 1n;
  if (first < -limit || last > limit || span < BigInt(minRowidSpan)) return null;
  // Counted last, and only here: cheap next to the export it guards, but not free.
  if (span > table.count() * BigInt(maxRowidsPerRow)) return null;
  return { fromRowid: Number(first), toRowid: Number(last) };
}

/**
 * The rows of `range` encoded on worker threads (no header: the writer's). Chunks are requested ahead, at most
 * `maxChunksInFlight`, and handed on in order: memory is bounded whatever the destination's pace.
 */
export async function* encodedChunks(
  read: Pick<ExportWorkerData, 'source' | 'columns' | 'format' | 'escapeFormulas'>,
  range: NonNullable<ReturnType<typeof parallelRowidRange>>,
  opts: Required<ParallelExportOptions>,
  signal: AbortSignal | undefined,
): AsyncGenerator<OutputPiece> {
  const pool = await ExportWorkerPool.start(
    opts.workers,
    { ...read, batchRows: opts.encodeBatchRows, batchChars: opts.encodeBatchChars },
    { maxYoungGenerationSizeMb: opts.workerYoungGenerationMb, maxOldGenerationSizeMb: opts.workerOldGenerationMb },
  ).catch((err: unknown) => Promise.reject(asExportError(err, read.source.db)));
  const chunkCount = Math.ceil((range.toRowid - range.fromRowid + 1) / opts.chunkRowids);
  const inFlight: Promise<OutputPiece>[] = [];
  let next = 0;
  try {
    while (next < chunkCount || inFlight.length > 0) {
      while (inFlight.length < opts.maxChunksInFlight && next < chunkCount) {
        const from = range.fromRowid + next * opts.chunkRowids;
        const chunk = pool.read(next++, from, Math.min(from + opts.chunkRowids - 1, range.toRowid));
        // Observed now: a chunk that fails while earlier ones are being written must not be an unhandled rejection.
        chunk.catch(() => undefined);
        inFlight.push(chunk);
      }
      yield await untilAborted(inFlight.shift()!, signal);
    }
  } catch (err) {
    throw asExportError(err, read.source.db);
  } finally {
    await pool.close();
  }
}

/** A worker's SQLite failure names the file and maps to the documented codes, as on the main-thread path. */
function asExportError(err: unknown, db: string): unknown {
  if (!(err instanceof ExportWorkerError)) return err;
  // The worker read the database without locks and saw it change (read-without-shm.ts).
  if (err.code === 'DB_CHANGED') return new DatabaseChangedError(db, { cause: err });
  return toDatabaseUseError(err, db);
}
