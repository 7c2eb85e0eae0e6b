/**
 * The tuning options of an export (and the parallel path's defaults), apart from the code that reads them:
 * exportTable()'s options are part of the package's public types (src/index.ts), which must not reach the
 * database drivers' types.
 */
import { availableParallelism } from 'node:os';

/** Tuning of the writing loop (write-output.ts, which holds every default). */
export interface PumpOptions {
  /** Rows encoded and written together (csv-stringify is called once per batch). */
  batchRows?: number;
  /** Longest stretch of synchronous work before the loop lets timers and signals run. */
  yieldEveryMs?: number;
  /** Stops the loop (the caller then discards the output). */
  signal?: AbortSignal;
  /** Called after each batch with the number of rows written so far; an exception aborts the export. */
  onProgress?: (rows: number) => void;
  /**
   * Called by writeOutput() after each batch and once more before the output is committed; an exception aborts
   * the export, nothing being left at `out`. The read snapshot's change check (see verifiedBy).
   */
  verify?: () => void;
}

/** Tuning of the parallel path (parallel-table-export.ts): each option, its default and why. */
export const PARALLEL_EXPORT_DEFAULTS = {
  /** Worker threads; below 2 every export stays on the main thread. */
  workers: Math.min(2, availableParallelism()),
  /** Tables whose rowid span (max - min + 1) is below this stay on the main thread: starting workers costs more. */
  minRowidSpan: 50_000,
  /**
   * Tables whose rowid span is more than this many times their row count stay on the main thread: chunks cut
   * by rowid would be mostly empty (at worst, after a row with a huge rowid, astronomically many of them).
   * Deletions leave holes; past 4 rowids per row, most of every chunk's read would find nothing.
   */
  maxRowidsPerRow: 4,
  /** Rowids per chunk, the unit a worker reads, encodes and sends back. */
  chunkRowids: 2_000,
  /** Chunks requested but not yet written, at most: with chunkRowids, this bounds the memory held. */
  maxChunksInFlight: 8,
  /**
   * Rows a worker hands the encoder at once... 50 rows: read+encode measured 20-25% less CPU than with 250 (the
   * batch and its strings die young).
   */
  encodeBatchRows: 50,
  /** ...or fewer, once their text adds up to this many characters (so that huge rows come one or a few at a time). */
  encodeBatchChars: 1 << 20,
  /**
   * Each worker's V8 young generation: larger scavenges less often, but every MB counts in the peak RSS. 12 MB:
   * a 4 MB semi-space. 16 rounds up to 8 MB semi-spaces and measured ~28 MB more peak RSS for 2 workers.
   */
  workerYoungGenerationMb: 12,
  /**
   * Each worker's V8 old generation, at most. A bound makes V8 collect sooner (without one, dead objects pile up
   * to tens of MB more per worker); a worker holds one batch at a time, and csv-stringify needs up to ~20 times
   * a value's size for a value full of quotes, so 512 MB passes a 20 MB value (measured) but not a 40 MB one:
   * the export then fails with EXPORT_WORKER_OUT_OF_MEMORY, and `export --sql` (main thread) is the way out.
   * 512 MB: as low a peak RSS as 128 MB measured (157-166 MB), and room for rows 4 times larger.
   */
  workerOldGenerationMb: 512,
} as const;

/** Any of PARALLEL_EXPORT_DEFAULTS. */
export type ParallelExportOptions = { [K in keyof typeof PARALLEL_EXPORT_DEFAULTS]?: number };
