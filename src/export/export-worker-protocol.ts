/** Messages between a parallel export's main thread and workers; types only, so neither side imports the other. */
import type { ExportFormat } from './row-encoders.ts';
import type { ChunkSource } from '../store/readers/table-rows.ts';

/** What a worker is started with (its workerData). */
export interface ExportWorkerData {
  /** The dataset, table and --since filter, read by the worker on a connection of its own. */
  source: ChunkSource;
  format: ExportFormat;
  /** CSV only: escape text a spreadsheet would run as a formula (the header is encoded by the main thread). */
  escapeFormulas: boolean;
  columns: string[];
  /** Rows handed to the encoder at once... */
  batchRows: number;
  /** ...or fewer, once their text values add up to this many characters. */
  batchChars: number;
}

/** Main thread to worker. */
export type ToExportWorkerMessage =
  /** Read, encode and send back the rows whose rowid is in [fromRowid, toRowid]. */
  | { type: 'read'; seq: number; fromRowid: number; toRowid: number }
  /** A buffer of an earlier chunk, written out, given back for reuse. */
  | { type: 'recycle'; buffer: ArrayBuffer };

/** Worker to main thread. */
export type ExportWorkerMessage =
  /** The worker's read transaction is open: its snapshot of the database is fixed from here on. */
  | { type: 'ready' }
  /** The encoded rows of chunk `seq`: the first `length` bytes of `buffer` (UTF-8, transferred, not copied). */
  | { type: 'chunk'; seq: number; rows: number; buffer: ArrayBuffer; length: number }
  /** The worker failed (opening the database or reading a chunk) and stops. */
  | { type: 'failed'; message: string; code: string | undefined };
