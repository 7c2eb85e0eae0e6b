/**
 * The dataset as every command sees it (openStore, open-store.ts): no file outside src/store asks which engine. Methods
 * are async (SQLite's run synchronously inside); nothing opens until one is called, and each closes what it opened.
 */
import type { PruneOptions, PruneReport } from './raw-prune.ts';
import type { ReadSnapshot } from './read-snapshot.ts';
import type { Reads } from './read-steps.ts';
import type { ReprocessStore } from './reprocess-store.ts';
import type { RunStore } from './run-store.ts';
import type { PlanLedger } from './plan-ledger.ts';
import type { ChunkSource, TableQuery } from './readers/table-rows.ts';
import type { Dataset } from './readers/dataset.ts';
import { sql, param } from '../statement.ts';
import { DatabaseError } from './errors.ts';
import { LockedError } from './run-lock.ts';

/** Every default of a statement's reading (query, export), on either engine, in one place. */
export const STATEMENT_DEFAULTS = {
  /** Rows read at once (SQLite's child sends them, PostgreSQL's cursor fetches them). */
  batchRows: 1000,
  /** --timeout with a terminal: none, Ctrl-C stops it. */
  terminalTimeoutSeconds: 0,
  /** --timeout without one (cron, a service): a runaway statement must not run all night. */
  unattendedTimeoutSeconds: 3600,
} as const;

/** How a statement's reading stops: on the signal (ExportInterruptedError) or past timeoutMs (QueryTimeoutError). */
export interface StatementOptions {
  signal?: AbortSignal | undefined;
  /** Longest the statement may run, in ms; 0 or undefined: no limit. */
  timeoutMs?: number | undefined;
}

/** A statement started in a snapshot: its columns, its rows (read once), and the end of its reading. */
export interface StartedStatement {
  columns: string[];
  rows: AsyncIterator<unknown[]> & AsyncIterable<unknown[]>;
  /** Stops the reading wherever it is (kills SQLite's child, closes PostgreSQL's cursor). */
  close(): Promise<void>;
}

/** What a caller does with a statement started in `snapshot`; its reading stops however this ends. */
type UseStatement<S, R> = (statement: S, snapshot: ReadSnapshot) => Promise<R>;

/** The rows of a table or view, started in a snapshot. */
export interface TableStatement {
  columns: string[];
  rows: Iterable<unknown[]> | AsyncIterable<unknown[]>;
  /** A table's rows by rowid range, for parallel readers on connections of their own; not on every engine. */
  chunks?: ChunkedTable | undefined;
}

/** A table that can be read a rowid range at a time (SQLite's rowids). */
export interface ChunkedTable {
  /** What a reader opens its own connection and statement on. */
  source: ChunkSource;
  /** The smallest and largest rowid, null when the table is empty. */
  bounds(): { first: bigint; last: bigint } | null;
  count(): bigint;
}

/** A read snapshot that runs the readers written once for both engines (read-steps.ts). */
export interface StepSnapshot extends ReadSnapshot {
  read<T>(reads: Reads<T>): Promise<T>;
  /** Each reader's answer in order; on PostgreSQL their statements go together, a round trip per round, not per statement. */
  readEach<T>(readers: readonly Reads<T>[]): Promise<T[]>;
}

export interface OpenRunOptions {
  /** How long the run's lock lasts without renewal (on PostgreSQL, a worker's claims), in ms; default the store's. */
  leaseMs?: number | undefined;
  /** PostgreSQL: the window the workers' shared rate is counted over, in ms; default a minute. */
  rateWindowMs?: number | undefined;
  /** PostgreSQL: a wait on the shared rate's 429 pause longer than this is logged, in ms; default 5 s. */
  rateLongWaitMs?: number | undefined;
  /** PostgreSQL: a wait for credits other workers' calls in flight hold longer than this is logged, in ms; default 5 s. */
  creditLongWaitMs?: number | undefined;
  /** PostgreSQL: how long a server gone away has to come back before the run's writer stops, in ms; default 2 minutes. */
  serverBackWithinMs?: number | undefined;
}

/** Options of DatasetStore.prune(): the rule's (raw-prune.ts), and the engine's reclaiming. */
export interface StorePruneOptions extends Required<Pick<PruneOptions, 'keepDays' | 'dryRun'>> {
  /** Reclaim the space afterwards (SQLite: VACUUM the file; PostgreSQL: VACUUM (ANALYZE) raw_responses). */
  vacuum: boolean;
}

/** What prune did, and the space it was done in. */
export interface StorePruneResult {
  /** The report as `prune --json` prints it: the rule's figures, and the engine's own beside them. */
  report: PruneReport;
  /** The space before and after, in bytes: `what` names it, `note` (may be empty) follows the figures. */
  space: { what: string; bytesBefore: number; bytesAfter: number; note: string };
}

export interface DatasetStore {
  /** The dataset as it may be printed: the file, or the URL with its password hidden. */
  readonly shown: string;
  /** The files the dataset is kept in, which no output may replace; none for a database on a server. */
  readonly files: readonly string[];
  /** Opens the dataset for a run (a SQLite file is created when missing; the schema is brought up to date). */
  openRun(options: OpenRunOptions): Promise<RunStore>;
  /** `plan`'s reads, in one snapshot; a missing dataset plans as if nothing had run. Nothing is written. */
  withPlanLedger<T>(fn: (ledger: PlanLedger) => Promise<T>): Promise<T>;
  /** `fn` in one read-only snapshot of an existing dataset (`status`, `enrich`); `statementTimeoutMs` bounds each statement (0: none). */
  read<T>(fn: (snapshot: StepSnapshot) => Promise<T>, options?: { statementTimeoutMs?: number }): Promise<T>;
  /** A user's read-only statement (`query`, `export --sql`), checked and started in a snapshot, handed to `use`. */
  userStatement<R>(options: StatementOptions & { sql: string }, use: UseStatement<StartedStatement, R>): Promise<R>;
  /** The rows of a table or view (`export <table>`), started in a snapshot and handed to `use`. */
  tableRows<R>(query: TableQuery, options: Pick<StatementOptions, 'signal'>, use: UseStatement<TableStatement, R>): Promise<R>;
  /** `reprocess`: the replay on the engine's store in one transaction, under the dataset's lock as a run takes it. */
  reprocess<T>(replay: (store: ReprocessStore) => Promise<T>): Promise<T>;
  /** Drops superseded raw bodies past the retention period under the dataset's lock, then reclaims the space. */
  prune(options: StorePruneOptions): Promise<StorePruneResult>;
  /** The package's openDataset(): the dataset opened read-only for SQL of the caller's own, until it is closed. */
  openDataset(): Promise<Dataset>;
  /** Sets a netingest_meta key (the last report's path); the dataset must exist; a read-only role or file throws. */
  writeMeta(key: string, value: string): Promise<void>;
}

/** `use` of a statement started in `snapshot`, its reading stopped however `use` ends (both engines). */
export async function usingStatement<R>(statement: StartedStatement, snapshot: ReadSnapshot, use: UseStatement<StartedStatement, R>): Promise<R> {
  try {
    return await use(statement, snapshot);
  } finally {
    await statement.close();
  }
}

/** netingest_meta's upsert, one text for both engines (run through read-steps: it returns its row). */
export const WRITE_META_SQL = sql`INSERT INTO netingest_meta (key, value) VALUES (${param}, ${param}) ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING key`;

/** The dataset's refusals whose message names no command: a newer build's, another program's, a read-only or busy one. */
const REFUSALS: ReadonlySet<string> = new Set(['DB_TOO_NEW', 'DB_NOT_NETINGEST', 'DB_READONLY', 'DB_LOCKED']);

/**
 * `err`, if the dataset refused `command` (reprocess, prune), as the same kind of error saying so, on either engine: a
 * cron log shows which command stopped. Any other error as it is.
 */
export function commandRefusal(err: unknown, command: string): unknown {
  const said = `\`netingest ${command}\` was refused: `;
  if (err instanceof LockedError) return new LockedError(said + err.message);
  if (err instanceof DatabaseError && REFUSALS.has(err.code)) return new DatabaseError(err.code, err.file, said + err.message, { cause: err });
  return err;
}
