/** Messages between `query`/`export --sql` and the child process that runs the statement (statement-child.ts). */

/** Parent to child: the statement to run, then `more` for each batch of rows. */
export type ToStatementChild =
  | { type: 'start'; db: string; sql: string; batchRows: number }
  | { type: 'more' };

/** Child to parent: a batch of raw rows (`done` after the last), or the error that stopped it. */
export type FromStatementChild =
  | { type: 'rows'; rows: unknown[][]; done: boolean }
  | { type: 'failed'; message: string; code: string | undefined };
