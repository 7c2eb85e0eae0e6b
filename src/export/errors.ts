import { NetingestError, UsageError } from '../errors.ts';

import { ExportInterruptedError } from '../store/readers/query-errors.ts';

export { ExportInterruptedError };

/** Stops an export whose signal has aborted (SIGINT/SIGTERM/SIGHUP): the caller then discards the output. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ExportInterruptedError();
}

/** The output file cannot be created (no such folder, permission denied): the user must fix it (exit 2). */
export class OutputError extends UsageError {
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(`${file}: ${message}`, 'OUTPUT_UNWRITABLE', options);
  }
}

/** Writing or finishing the output failed midway (disk full, I/O error); the partial file was removed (exit 1). */
export class OutputWriteError extends NetingestError {
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super('OUTPUT_WRITE_FAILED', `${file}: ${message}`, options);
  }
}
