/**
 * A user's statement's rows, read in a child process: better-sqlite3 cannot interrupt a statement, so a runaway one
 * would block signals here (a busy worker thread keeps the process alive too). Killed on the signal or the timeout.
 */
import type { ChildProcess } from 'node:child_process';
import { NetingestError } from '../../errors.ts';
import { startChild } from '../../threads/start.ts';
import { ExportInterruptedError, QueryTimeoutError } from '../readers/query-errors.ts';
import { STATEMENT_DEFAULTS, type StatementOptions } from '../dataset-store.ts';

const CHILD = new URL('./statement-child.ts', import.meta.url);

/** Parent to child: the statement to run, then `more` for each batch of rows. */
export type ToStatementChild =
  | { type: 'start'; db: string; sql: string; batchRows: number }
  | { type: 'more' };

/** Child to parent: a batch of raw rows (`done` after the last), or the error that stopped it. */
export type FromStatementChild =
  | { type: 'rows'; rows: unknown[][]; done: boolean }
  | { type: 'failed'; message: string; code: string | undefined };

/** The statement, its dataset and how its reading stops (its time limit counting from the first row asked for). */
export interface StatementRowsOptions extends StatementOptions {
  db: string;
  /** Already checked by prepareReadQuery on the parent's connection: the child prepares it again. */
  sql: string;
}

/** The statement's raw rows (bigints for integers, Buffers for blobs); returning early kills the child. */
export async function* statementRows(options: StatementRowsOptions): AsyncGenerator<unknown[]> {
  const run = new StatementRun(options);
  try {
    let pending = run.next();
    for (;;) {
      const batch = await pending;
      // Asked for before this batch is written, so that the child reads while the parent encodes.
      if (!batch.done) pending = run.next();
      for (const row of batch.rows) yield row;
      if (batch.done) return;
    }
  } finally {
    run.stop();
  }
}

type Batch = Omit<Extract<FromStatementChild, { type: 'rows' }>, 'type'>;

class StatementRun {
  private readonly child: ChildProcess;
  private waiter: { resolve: (batch: Batch) => void; reject: (err: Error) => void } | null = null;
  private failure: Error | null = null;
  private stopped = false;
  private stderr = '';
  private readonly timer: NodeJS.Timeout | null;
  private readonly onAbort = () => this.fail(new ExportInterruptedError());

  constructor(private readonly options: StatementRowsOptions) {
    this.child = startChild(CHILD);
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr = (this.stderr + d).slice(-2000)));
    this.child.on('message', (m: FromStatementChild) => (m.type === 'rows' ? this.deliver(m) : this.fail(childError(m))));
    this.child.on('error', (err) => this.fail(err));
    this.child.on('exit', (code, signal) => this.fail(exitError(code, signal, this.stderr)));
    const timeoutMs = options.timeoutMs ?? 0;
    this.timer = timeoutMs > 0 ? setTimeout(() => this.fail(new QueryTimeoutError(timeoutMs / 1000)), timeoutMs) : null;
    if (options.signal?.aborted) this.onAbort();
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.send({ type: 'start', db: options.db, sql: options.sql, batchRows: STATEMENT_DEFAULTS.batchRows });
  }

  next(): Promise<Batch> {
    const promise = new Promise<Batch>((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      this.waiter = { resolve, reject };
      this.send({ type: 'more' });
    });
    // Awaited later, maybe after a failure: never an unhandled rejection meanwhile.
    promise.catch(() => undefined);
    return promise;
  }

  /** Kills the child, whatever it is doing; later events change nothing. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.child.kill('SIGKILL');
  }

  private send(message: ToStatementChild): void {
    if (this.child.connected) this.child.send(message);
  }

  private deliver(batch: Batch): void {
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.resolve(batch);
  }

  private fail(err: Error): void {
    if (this.stopped || this.failure) return;
    this.failure = err;
    this.stop();
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.reject(err);
  }
}

/** The child's error as the parent's: SQLite's keep their code (asQueryError words them), others are plain. */
function childError(m: Extract<FromStatementChild, { type: 'failed' }>): Error {
  if (m.code?.startsWith('SQLITE_')) return Object.assign(new Error(m.message), { code: m.code });
  return new NetingestError(m.code ?? 'QUERY_FAILED', m.message);
}

/** The child ended early: by a stop signal to the whole process group (the parent stops too), or a crash (stderr). */
function exitError(code: number | null, signal: NodeJS.Signals | null, stderr: string): Error {
  if (signal === 'SIGINT' || signal === 'SIGTERM' || signal === 'SIGHUP') return new ExportInterruptedError();
  const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
  const said = stderr.trim().split('\n').at(-1);
  return new NetingestError('QUERY_FAILED', `the process reading the statement ${how}${said ? `: ${said}` : ''}`);
}
