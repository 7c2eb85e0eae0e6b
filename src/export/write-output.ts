/**
 * One streaming write: opens the destination, writes the pieces in order with backpressure, and commits, or discards
 * everything on failure. It yields to the event loop regularly so SIGINT is seen even without backpressure.
 */
import { openFileSink, streamSink, throwIfAborted, OutputClosedError, type OutputSink } from './output-sink.ts';
import type { PumpOptions } from './export-options.ts';
import { ExportInterruptedError, QueryTimeoutError } from '../store/readers/query-errors.ts';
import type { RowEncoder } from './row-encoders.ts';
import { plural } from '../plural.ts';

/** Where to write: a file path, or a stream when `out` is undefined. */
export interface OutputTarget {
  /** File written atomically (temporary sibling + rename); undefined writes to `stream`. */
  out?: string | undefined;
  /** Stream used when `out` is undefined. Default process.stdout. */
  stream?: NodeJS.WritableStream | undefined;
}

export interface WriteResult {
  rows: number;
  /** Absolute or given path of the file written, or null for a stream. */
  out: string | null;
  /** True when the reader of the stream closed it early (EPIPE, e.g. `| head`): the rows count what was sent. */
  readerClosed: boolean;
}

/** Part of the output: text or UTF-8 bytes, and the rows it holds. */
export interface OutputPiece {
  data: string | Uint8Array;
  rows: number;
  /** Gives `data`'s buffer back for reuse once it has reached the destination (see OutputSink.write). */
  release?: () => void;
}

// Small batches: fewer rows survive into the old generation while a batch fills.
export const PUMP_DEFAULTS = { batchRows: 250, yieldEveryMs: 50 } as const;

/**
 * `options` with the snapshot's change check added to verify: a database read without locks that changes stops the
 * export before anything is committed. Typed by its one method: public types must not reach the drivers'.
 */
export function verifiedBy<T extends PumpOptions>(snapshot: { assertUnchanged(): void }, options: T): T {
  return {
    ...options,
    verify: () => {
      snapshot.assertUnchanged();
      options.verify?.();
    },
  };
}

/** Rows as a driver gives them: a synchronous iterator (better-sqlite3) or an asynchronous one. */
export type Rows = Iterable<readonly unknown[]> | AsyncIterable<readonly unknown[]>;

/** Writes `rows` through `encoder` to `output`; on any error nothing is left at `output.out`. */
export async function writeRows(rows: Rows, encoder: RowEncoder, output: OutputTarget & PumpOptions): Promise<WriteResult> {
  return writeOutput(output, encodedBatches(rows, encoder, output.batchRows ?? PUMP_DEFAULTS.batchRows), encoder);
}

/** Writes `framing`'s (an encoder's) header, `pieces` and footer to `output` and commits; on failure nothing is left at `out`. */
export async function writeOutput(
  output: OutputTarget & PumpOptions,
  pieces: AsyncIterable<OutputPiece> | Iterable<OutputPiece>,
  framing: Partial<RowEncoder> = {},
): Promise<WriteResult> {
  const sink: OutputSink = output.out !== undefined ? await openFileSink(output.out) : streamSink(output.stream ?? process.stdout);
  const written = { rows: 0 };
  try {
    await writePieces(pieces, framing, sink, output, written);
    output.verify?.();
    // An interrupt that came after the last piece (during its one long statement, say) still stops here.
    throwIfAborted(output.signal);
    await sink.commit(output.signal);
    return { rows: written.rows, out: output.out ?? null, readerClosed: false };
  } catch (err) {
    await sink.abort();
    if (err instanceof OutputClosedError) {
      // What the reader took before it left (`| head`) may still come from a database that changed meanwhile.
      output.verify?.();
      return { rows: written.rows, out: null, readerClosed: true };
    }
    // Rows sent to a stream cannot be taken back: "no output file was written" would let a `> out.csv` pass as whole.
    if (err instanceof ExportInterruptedError && output.out === undefined) throw streamInterrupted(written.rows);
    if (err instanceof QueryTimeoutError) throw timedOut(err, output.out === undefined ? written.rows : null);
    throw err;
  }
}

/** The writing loop; `written.rows` counts the rows written so far. */
async function writePieces(
  pieces: AsyncIterable<OutputPiece> | Iterable<OutputPiece>,
  framing: Partial<RowEncoder>,
  sink: OutputSink,
  { signal, onProgress, verify, yieldEveryMs = PUMP_DEFAULTS.yieldEveryMs }: PumpOptions,
  written: { rows: number },
): Promise<void> {
  throwIfAborted(signal);
  // Held back until the first piece is ready: bytes on a pipe cannot be taken back if the first row fails.
  let header = framing.header?.() ?? '';
  let lastYield = performance.now();
  for await (const piece of pieces) {
    if (piece.data.length > 0) {
      if (header) await untilAborted(sink.write(header), signal);
      header = '';
      await untilAborted(sink.write(piece.data, piece.release), signal);
    } else {
      piece.release?.();
    }
    written.rows += piece.rows;
    verify?.();
    onProgress?.(written.rows);
    if (performance.now() - lastYield >= yieldEveryMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      lastYield = performance.now();
    }
    throwIfAborted(signal);
  }
  const footer = header + (framing.footer?.(written.rows) ?? '');
  if (footer) await untilAborted(sink.write(footer), signal);
}

/**
 * `rows` encoded `batchRows` at a time. A sync source keeps its own loop: `for await` costs a microtask per row.
 * Stopping early returns the iterator, which resets a better-sqlite3 statement.
 */
async function* encodedBatches(rows: Rows, encoder: RowEncoder, batchRows: number): AsyncGenerator<OutputPiece> {
  let batch: (readonly unknown[])[] = [];
  const full = (row: readonly unknown[]) => batch.push(row) >= batchRows;
  const take = (): OutputPiece => {
    const piece = { data: encoder.encode(batch), rows: batch.length };
    batch = [];
    return piece;
  };
  if (Symbol.asyncIterator in rows) {
    for await (const row of rows) if (full(row)) yield take();
  } else {
    for (const row of rows) if (full(row)) yield take();
  }
  if (batch.length > 0) yield take();
}

/** Waits for `wait` (if any), but rejects with ExportInterruptedError as soon as `signal` aborts. */
export async function untilAborted<T>(wait: Promise<T> | T, signal: AbortSignal | undefined): Promise<T> {
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

/** The timeout's message as --out's file or stdout was left: no file, or the rows sent (`written`) that cannot be taken back. */
function timedOut(err: QueryTimeoutError, written: number | null): QueryTimeoutError {
  if (written === null) return new QueryTimeoutError(err.seconds, 'no output file was written');
  if (written === 0) return err;
  return new QueryTimeoutError(err.seconds, `${plural(written, 'row')} had been written to the output: what it holds is incomplete`);
}

function streamInterrupted(written: number): ExportInterruptedError {
  if (written === 0) return new ExportInterruptedError('interrupted; nothing was written');
  return new ExportInterruptedError(
    `interrupted after ${plural(written, 'row')} had been written to the output: what it holds is incomplete`,
  );
}
