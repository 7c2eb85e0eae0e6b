/**
 * Runs one streaming write from start to finish: opens the destination (a temporary file renamed into place,
 * or a stream), pumps the rows, and commits, or discards everything on any failure or interrupt.
 */
import { openFileSink, streamSink, OutputClosedError, type OutputSink } from './output-sink.ts';
import { pumpRows } from './pump-rows.ts';
import type { PumpOptions } from './export-options.ts';
import { ExportInterruptedError, throwIfAborted } from './errors.ts';
import type { RowEncoder } from './row-encoders.ts';
import { plural } from '../plural.ts';

/** Where to write: a file path, or a stream when `out` is undefined. */
export interface OutputTarget {
  /** File written atomically (temporary sibling + rename); undefined writes to `stream`. */
  out?: string | undefined;
  /** Stream used when `out` is undefined. Default process.stdout. */
  stream?: NodeJS.WritableStream | undefined;
}

/** What a finished write reports. */
export interface WriteResult {
  rows: number;
  /** Absolute or given path of the file written, or null for a stream. */
  out: string | null;
  /** True when the reader of the stream closed it early (EPIPE, e.g. `| head`): the rows count what was sent. */
  readerClosed: boolean;
}

/** Writes `rows` through `encoder` to `target`; on any error nothing is left at `target.out`. */
export async function writeRows(
  rows: Iterable<readonly unknown[]> | AsyncIterable<readonly unknown[]>,
  encoder: RowEncoder,
  target: OutputTarget,
  pump: PumpOptions = {},
): Promise<WriteResult> {
  return writeOutput(target, pump, (sink, options) => pumpRows(rows, encoder, sink, options));
}

/**
 * Opens `target`, lets `produce` write to it (resolving to the row count, calling `onProgress` as rows are
 * written) and commits; on any error or interrupt the output is discarded, so nothing is left at `target.out`.
 */
export async function writeOutput(
  target: OutputTarget,
  pump: PumpOptions,
  produce: (sink: OutputSink, options: PumpOptions) => Promise<number>,
): Promise<WriteResult> {
  const sink: OutputSink = target.out !== undefined ? await openFileSink(target.out) : streamSink(target.stream ?? process.stdout);
  let written = 0;
  try {
    written = await produce(sink, {
      ...pump,
      onProgress: (n) => {
        written = n;
        pump.verify?.();
        pump.onProgress?.(n);
      },
    });
    pump.verify?.();
    // An interrupt that came after the producer last looked (during its one long statement, say) still stops here.
    throwIfAborted(pump.signal);
    await sink.commit(pump.signal);
    return { rows: written, out: target.out ?? null, readerClosed: false };
  } catch (err) {
    await sink.abort();
    if (err instanceof OutputClosedError) {
      // What the reader took before it left (`| head`) may still come from a database that changed meanwhile.
      pump.verify?.();
      return { rows: written, out: null, readerClosed: true };
    }
    // Rows sent to a stream cannot be taken back: "no output file was written" would let a `> out.csv` pass as whole.
    if (err instanceof ExportInterruptedError && target.out === undefined) throw streamInterrupted(written);
    throw err;
  }
}

function streamInterrupted(written: number): ExportInterruptedError {
  if (written === 0) return new ExportInterruptedError('interrupted; nothing was written');
  return new ExportInterruptedError(
    `interrupted after ${plural(written, 'row')} had been written to the output: what it holds is incomplete`,
  );
}
