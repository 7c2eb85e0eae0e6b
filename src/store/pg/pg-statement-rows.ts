/**
 * A statement's rows on PostgreSQL (`query`, `export`), streamed from a cursor in the read snapshot. On the signal or
 * past `timeoutMs` a second connection cancels it: the rows end with ExportInterruptedError or QueryTimeoutError.
 */
import QueryStream from 'pg-query-stream';
import type { PgSnapshot } from './read-snapshot.ts';
import { READER_TYPES } from './reader-values.ts';
import { asPgQueryError } from '../readers/read-only-sql.ts';
import { ExportInterruptedError, QueryTimeoutError } from '../readers/query-errors.ts';
import { STATEMENT_DEFAULTS, type StartedStatement, type StatementOptions } from '../dataset-store.ts';

/** Starts `sql` in `snapshot` and waits for its first row (or its end), which names the columns. */
export async function startPgStatement(
  snapshot: PgSnapshot,
  sql: string,
  params: readonly unknown[],
  options: StatementOptions = {},
): Promise<StartedStatement> {
  const stop = new StatementStop(snapshot, options);
  const stream = snapshot.client.query(new QueryStream(sql, [...params], { rowMode: 'array', types: READER_TYPES, batchSize: STATEMENT_DEFAULTS.batchRows }));
  const close = async () => {
    stop.end();
    await closeStream(stream);
  };
  const iterator: AsyncIterator<unknown[]> = stream[Symbol.asyncIterator]();
  let first: IteratorResult<unknown[]>;
  try {
    first = await iterator.next();
  } catch (err) {
    await close();
    throw stop.explain(err);
  }
  const fields = (stream._result as { fields: Array<{ name: string }> }).fields;
  async function* rows(): AsyncGenerator<unknown[]> {
    try {
      for (let next = first; !next.done; next = await iterator.next()) yield next.value;
    } catch (err) {
      throw stop.explain(err);
    } finally {
      await close();
    }
  }
  return { columns: fields.map((f) => f.name), rows: rows(), close };
}

/** Ends the cursor (Close on the server) and waits until the connection is free for the next statement. */
async function closeStream(stream: QueryStream): Promise<void> {
  if (stream.closed) return;
  await new Promise<void>((resolve) => {
    stream.once('close', () => resolve());
    stream.destroy();
  });
}

/** Why the statement stops early: the signal or the time limit, each cancelling it on the server. */
class StatementStop {
  private reason: 'interrupted' | 'timeout' | null = null;
  private readonly timer: NodeJS.Timeout | null;
  private readonly onAbort = () => this.cancel('interrupted');

  constructor(
    private readonly snapshot: PgSnapshot,
    private readonly options: StatementOptions,
  ) {
    const timeoutMs = options.timeoutMs ?? 0;
    this.timer = timeoutMs > 0 ? setTimeout(() => this.cancel('timeout'), timeoutMs) : null;
    if (options.signal?.aborted) this.onAbort();
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** The error to report for `err`, a failure of the statement. */
  explain(err: unknown): unknown {
    const canceled = (err as { code?: unknown } | null)?.code === '57014';
    if (this.reason === 'interrupted' || (canceled && this.options.signal?.aborted)) return new ExportInterruptedError();
    // 57014 without our cancel: the transaction's statement_timeout, set from the same --timeout.
    if (this.reason === 'timeout' || (canceled && (this.options.timeoutMs ?? 0) > 0)) return new QueryTimeoutError((this.options.timeoutMs ?? 0) / 1000);
    return asPgQueryError(err);
  }

  end(): void {
    if (this.timer) clearTimeout(this.timer);
    this.options.signal?.removeEventListener('abort', this.onAbort);
  }

  private cancel(reason: 'interrupted' | 'timeout'): void {
    if (this.reason) return;
    this.reason = reason;
    // From another connection: this one is busy with the statement. A statement already over is not affected.
    this.snapshot.pool.query('SELECT pg_cancel_backend($1)', [this.snapshot.backendPid]).catch(() => undefined);
  }
}
