import { NetingestError, UsageError } from '../errors.ts';

export { BadQueryError, WriteRefusedError } from '../store/readers/query-errors.ts';

/** The export was stopped by SIGINT/SIGTERM (or its AbortSignal); nothing was left at the output path. Exit 130. */
export class ExportInterruptedError extends NetingestError {
  constructor(message = 'interrupted; no output file was written') {
    super('INTERRUPTED', message);
  }
}

/** The output file cannot be created (no such folder, permission denied): the user must fix it (exit 2). */
export class OutputError extends UsageError {
  /** The output path as the user named it. */
  readonly file: string;

  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(`${file}: ${message}`, 'OUTPUT_UNWRITABLE', options);
    this.file = file;
  }
}

/** Writing or finishing the output failed midway (disk full, I/O error); the partial file was removed (exit 1). */
export class OutputWriteError extends NetingestError {
  /** The output path as the user named it. */
  readonly file: string;

  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super('OUTPUT_WRITE_FAILED', `${file}: ${message}`, options);
    this.file = file;
  }
}

/** `query` or `export --sql` ran past its --timeout and was stopped; nothing was left at the output path (exit 124). */
export class QueryTimeoutError extends NetingestError {
  constructor(seconds: number) {
    super(
      'QUERY_TIMEOUT',
      `the statement ran for more than ${seconds} s (--timeout) and was stopped; no output file was written. ` +
        'Narrow it (WHERE, LIMIT) or give a longer --timeout (0: none)',
    );
  }
}
