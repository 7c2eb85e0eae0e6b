/**
 * The tuning options of an export, apart from the code that reads them: exportTable()'s options are part of the
 * package's public types (src/index.ts), which must not reach the database drivers' types.
 */

/** Tuning of the loop (pump-rows.ts, which holds every default). */
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

/** Tuning of the parallel path; every default is in PARALLEL_EXPORT_DEFAULTS. */
export interface ParallelExportOptions {
  /** Worker threads; below 2 every export stays on the main thread. */
  workers?: number;
  /** Tables whose rowid span (max - min + 1) is below this stay on the main thread: starting workers costs more. */
  minRowidSpan?: number;
  /**
   * Tables whose rowid span is more than this many times their row count stay on the main thread: chunks cut
   * by rowid would be mostly empty (at worst, after a row with a huge rowid, astronomically many of them).
   */
  maxRowidsPerRow?: number;
  /** Rowids per chunk, the unit a worker reads, encodes and sends back. */
  chunkRowids?: number;
  /** Chunks requested but not yet written, at most: with chunkRowids, this bounds the memory held. */
  maxChunksInFlight?: number;
  /** Rows a worker hands the encoder at once... */
  encodeBatchRows?: number;
  /** ...or fewer, once their text adds up to this many characters (so that huge rows come one or a few at a time). */
  encodeBatchChars?: number;
  /** Each worker's V8 young generation: larger scavenges less often, but every MB counts in the peak RSS. */
  workerYoungGenerationMb?: number;
  /**
   * Each worker's V8 old generation, at most. A bound makes V8 collect sooner (without one, dead objects pile up
   * to tens of MB more per worker); a worker holds one batch at a time, and csv-stringify needs up to ~20 times
   * a value's size for a value full of quotes, so 512 MB passes a 20 MB value (measured) but not a 40 MB one:
   * the export then fails with EXPORT_WORKER_OUT_OF_MEMORY, and `export --sql` (main thread) is the way out.
   */
  workerOldGenerationMb?: number;
}
