/** Why a user's statement (`query`, `export --sql`, openDataset's `all()`) was not run; export's own errors: export/output-sink.ts. */
import { NetingestError, UsageError } from '../../errors.ts';

/** A statement given to `query` or `export --sql` that is not a plain read (exit 2). */
export class WriteRefusedError extends UsageError {
  constructor(message: string) {
    super(message, 'QUERY_WRITE_REFUSED');
  }
}

/** SQL that SQLite rejects (syntax, unknown table or column): the user must fix it (exit 2). */
export class BadQueryError extends UsageError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 'QUERY_INVALID', options);
  }
}

/** The export was stopped by SIGINT/SIGTERM (or its AbortSignal); nothing was left at the output path. Exit 130. */
export class ExportInterruptedError extends NetingestError {
  constructor(message = 'interrupted; no output file was written') {
    super('INTERRUPTED', message);
  }
}

/**
 * `query` or `export --sql` ran past its --timeout and was stopped (exit 124); `outcome`: what the output got (writeOutput
 * says how many rows stdout had been sent).
 */
export class QueryTimeoutError extends NetingestError {
  constructor(
    readonly seconds: number,
    outcome = 'nothing was written',
  ) {
    super(
      'QUERY_TIMEOUT',
      `the statement ran for more than ${seconds} s (--timeout) and was stopped; ${outcome}. ` +
        'Narrow it (WHERE, LIMIT) or give a longer --timeout (0: none)',
    );
  }
}
