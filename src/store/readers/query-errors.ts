/**
 * Why a user's statement (`query`, `export --sql`, openDataset's `all()`) was not run: errors of the store's
 * readers, which export/errors.ts re-exports with the other errors of the export commands.
 */
import { UsageError } from '../../errors.ts';

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
