/** Export tuning options and parallel defaults, apart from the code: exportTable()'s options are public types, which must not reach the drivers'. */
import { availableParallelism } from 'node:os';

/** Tuning of the writing loop (write-output.ts, which holds every default). */
export interface PumpOptions {
  /** Rows encoded and written together. */
  batchRows?: number;
  /** Longest stretch of synchronous work before the loop lets timers and signals run. */
  yieldEveryMs?: number;
  /** Stops the loop (the caller then discards the output). */
  signal?: AbortSignal;
  /** Called after each batch with the number of rows written so far; an exception aborts the export. */
  onProgress?: (rows: number) => void;
  /** The snapshot's change check (see verifiedBy), run after each batch and before commit; a throw aborts. */
  verify?: () => void;
}

/** Tuning of the parallel path (parallel-table-export.ts): each option, its default and why. */
export const PARALLEL_EXPORT_DEFAULTS = {
  /** Worker threads; below 2 every export stays on the main thread. */
  workers: Math.min(2, availableParallelism()),
  /** Tables whose rowid span (max - min + 1) is below this stay on the main thread: starting workers costs more. */
  minRowidSpan: 50_000,
  /** Tables whose rowid span exceeds this many times their row count stay on the main thread: chunks would be empty. */
  maxRowidsPerRow: 4,
  /** Rowids per chunk, the unit a worker reads, encodes and sends back. */
  chunkRowids: 2_000,
  /** Chunks requested but not yet written, at most: with chunkRowids, this bounds the memory held. */
  maxChunksInFlight: 8,
  /** Rows a worker hands the encoder at once (small, so the batch and its strings die young)... */
  encodeBatchRows: 50,
  /** ...or fewer, once their text adds up to this many characters (so that huge rows come one or a few at a time). */
  encodeBatchChars: 1 << 20,
  /** Each worker's V8 young generation: larger scavenges less often but adds to peak RSS (16 rounds up to 8 MB). */
  workerYoungGenerationMb: 12,
  /**
   * Each worker's V8 old generation cap: a bound makes V8 collect sooner. A value takes a few times its size while
   * it is encoded; past that, EXPORT_WORKER_OUT_OF_MEMORY, and `export --sql` (main thread) is the way out.
   */
  workerOldGenerationMb: 512,
} as const;

export type ParallelExportOptions = { [K in keyof typeof PARALLEL_EXPORT_DEFAULTS]?: number };
