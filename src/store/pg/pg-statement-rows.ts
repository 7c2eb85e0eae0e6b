/**
 * A statement's rows on PostgreSQL (`query`, `export`), streamed from a cursor in the read snapshot. On the signal or
 * past `timeoutMs` a second connection cancels it: the rows end with ExportInterruptedError or QueryTimeoutError.
 */
import type { EventEmitter } from 'node:events';
import type pg from 'pg';
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
  const stop = statementStop(snapshot, options);
  const ended = connectionEnd(snapshot.client);
  const stream = snapshot.client.query(new QueryStream(sql, [...params], { rowMode: 'array', types: READER_TYPES }));
  const close = async () => {
    stop.end();
    await Promise.race([closeStream(stream), ended.gone]);
    ended.dispose();
  };
  // Read from the stream's cursor, not the stream: the stream fetches a fixed number of rows, 1000 raw bodies of 13 KB
  // at once (twice, read ahead), and the heap grew past 250 MB; a fetch here brings about FETCH_TEXT_CHARS.
  const cursor = stream.cursor as { read(rows: number): Promise<unknown[][]> };
  // A connection the server ends mid-statement (a restart) never answers pg-cursor's Close, and the stream waits
  // for that answer for ever: its rows end with the connection's end instead.
  const fetch = (asked: number) => ended.race(cursor.read(asked)).then((rows) => ({ rows, more: rows.length === asked }));
  let first: { rows: unknown[][]; more: boolean };
  try {
    first = await fetch(FIRST_FETCH_ROWS);
  } catch (err) {
    await close();
    throw stop.explain(err);
  }
  const fields = (stream._result as { fields: Array<{ name: string }> }).fields;
  async function* rows(): AsyncGenerator<unknown[]> {
    try {
      for (let batch = first; ; ) {
        // The next rows are fetched while these are written; a rejection is awaited below, or dropped with the reader.
        const next = batch.more ? fetch(nextFetchRows(batch.rows)) : null;
        next?.catch(() => undefined);
        yield* batch.rows;
        if (next === null) return;
        batch = await next;
      }
    } catch (err) {
      throw stop.explain(err);
    } finally {
      await close();
    }
  }
  return { columns: fields.map((f) => f.name), rows: rows(), close };
}

/** Rows of the first fetch: enough for a table of short rows, few enough if they are wide. */
const FIRST_FETCH_ROWS = 100;
/** Characters of text a fetch brings, about: STATEMENT_DEFAULTS.batchRows short rows, or fewer wide ones. */
const FETCH_TEXT_CHARS = 1 << 20;

/** How many rows the next fetch asks for, from the width of the text of `rows`, the last fetched. */
function nextFetchRows(rows: unknown[][]): number {
  let chars = 0;
  for (const row of rows) for (const value of row) if (typeof value === 'string') chars += value.length;
  const perRow = Math.max(1, chars / rows.length);
  return Math.max(1, Math.min(STATEMENT_DEFAULTS.batchRows, Math.floor(FETCH_TEXT_CHARS / perRow)));
}

/** Ends the cursor (Close on the server) and waits until the connection is free for the next statement. */
async function closeStream(stream: QueryStream): Promise<void> {
  if (stream.closed) return;
  await new Promise<void>((resolve) => {
    stream.once('close', () => resolve());
    stream.destroy();
  });
}

/**
 * When `client`'s connection ends, `gone` resolves, and a promise given to `race` rejects as node-postgres says
 * ("Connection terminated unexpectedly") unless it settled first.
 */
function connectionEnd(client: pg.PoolClient): { gone: Promise<void>; race<T>(promise: Promise<T>): Promise<T>; dispose(): void } {
  const connection = (client as unknown as { connection: EventEmitter & { stream: { destroyed: boolean } } }).connection;
  let ended = connection.stream.destroyed;
  let onEnd = () => undefined as void;
  const gone = new Promise<void>((resolve) => (onEnd = () => ((ended = true), resolve())));
  connection.once('end', onEnd);
  if (ended) onEnd();
  // A listener per fetch, removed once its rows are in: Promise.race against one pending promise would leave it a
  // reaction per fetch, each holding its rows, so a million-row export would keep every row in memory.
  const race = <T>(promise: Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      const fail = () => reject(new Error('Connection terminated unexpectedly'));
      connection.once('end', fail);
      if (ended) fail();
      promise.then(resolve, reject).finally(() => connection.off('end', fail));
    });
  return { gone, race, dispose: () => connection.off('end', onEnd) };
}

/** Why the statement stops early: the signal or the time limit, each cancelling it on the server. */
function statementStop(snapshot: PgSnapshot, options: StatementOptions) {
  let reason: 'interrupted' | 'timeout' | null = null;
  const cancel = (why: 'interrupted' | 'timeout') => {
    if (reason) return;
    reason = why;
    // From another connection: this one is busy with the statement. A statement already over is not affected.
    snapshot.pool.query('SELECT pg_cancel_backend($1)', [snapshot.backendPid]).catch(() => undefined);
  };
  const onAbort = () => cancel('interrupted');
  const timeoutMs = options.timeoutMs ?? 0;
  const timer = timeoutMs > 0 ? setTimeout(() => cancel('timeout'), timeoutMs) : null;
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  return {
    /** The error to report for `err`, a failure of the statement. */
    explain(err: unknown): unknown {
      const canceled = (err as { code?: unknown } | null)?.code === '57014';
      if (reason === 'interrupted' || (canceled && options.signal?.aborted)) return new ExportInterruptedError();
      // 57014 without our cancel: the transaction's statement_timeout, set from the same --timeout.
      if (reason === 'timeout' || (canceled && timeoutMs > 0)) return new QueryTimeoutError(timeoutMs / 1000);
      return asPgQueryError(err);
    },
    end(): void {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    },
  };
}
