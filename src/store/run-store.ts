/**
 * The store as the run engine sees it: small ports, one implementation per engine (sqlite-run-store.ts,
 * pg/pg-run-store.ts). A method may answer at once (SQLite) or with a promise (PostgreSQL): the runner awaits both.
 */
import type { SetAsideRecord } from '../operations/answer-contract.ts';
import type { CreditCounters, Operation } from '../spec/types.ts';
import type { CreditHistory } from '../credits/credit-meter.ts';
import type { CreditGuard, CreditLimits } from '../credits/credit-guard.ts';
import type { AnswerAnomalyKind } from './tables.ts';
import type { AnswerDriftRow } from './answer-drift.ts';
import type { CallHistory } from './api-calls.ts';
import type { Ledger, RunnableFilter, TaskRow } from './ledger.ts';
import type { LockLostError } from './run-lock.ts';
import type { RunEnd } from './runs.ts';
import type { GateWait } from '../rate/rate-gate.ts';
import type { GroupCommitWriter } from './group-commit-writer.ts';

export type Awaitable<T> = T | Promise<T>;

/** The ledger's methods a run uses (store/ledger.ts says what each does), answered at once or with a promise. */
type RunLedgerMethod = Exclude<keyof Ledger, 'dueState' | 'hasSharedAnswer' | 'settle' | 'markRecovered' | 'runnableAfter'>;
export type RunLedger = { [M in RunLedgerMethod]: (...args: Parameters<Ledger[M]>) => Awaitable<ReturnType<Ledger[M]>> };

/**
 * Where a job's due tasks come from, a batch at a time: SQLite pages the ledger after the last id seen (the run
 * holds the one lock); PostgreSQL claims them (task claims with a lease), so several workers share a job.
 */
export interface DueTasks {
  /** Whether each batch holds whole inputs (claims): a batch's last input is worked before the next batch is asked. */
  readonly wholeInputs: boolean;
  /** The next due tasks, whole inputs in ledger order; [] when none is left for this worker. */
  next(limit: number): Awaitable<TaskRow[]>;
  /** The tasks of these inputs are settled (or given up): others may take what is still due. */
  settled(inputKeys: readonly string[]): Awaitable<void>;
  /**
   * Whether this worker may still call the input's pages, asked before each call (claims: its lease holds). A false
   * answer has stopped the run, as a lost lock does (exit 4). Absent on SQLite, whose lock is checked instead.
   */
  holds?(inputKey: string): Awaitable<boolean>;
  close(): Awaitable<void>;
}

/** A run once its row is written: its id, and the run its workers share (what `maxPerRun` counts). */
export interface StartedRun {
  id: number;
  runKey: string;
}

/** What a run's `runs` row starts with. */
export interface RunStart {
  /** The names of the jobs it runs. */
  jobs: string[];
  /** ISO time of its start (the server's clock on PostgreSQL). */
  startedAt: string;
  /** The process and host running it. */
  pid: number;
  host: string;
  /**
   * The run to belong to (NETINGEST_RUN_KEY); without it a PostgreSQL worker joins a live run working one of `jobs`,
   * or starts its own (`run-<id>`, as every SQLite run is).
   */
  sharedRunKey?: string | undefined;
  /** A `--refresh` run; not one when not given. */
  refresh?: boolean;
}

/** The `runs` rows (store/runs.ts). */
export interface RunRecords {
  start(run: RunStart): Awaitable<StartedRun>;
  /** Writes the run's end; on SQLite only while the run holds its lock (LockLostError otherwise). */
  end(runId: number, fields: RunEnd): Awaitable<void>;
}

/**
 * The run's hold on the dataset: SQLite's one-run lock (store/run-lock.ts); on PostgreSQL the dataset lock held
 * shared (pg/dataset-lock.ts: workers share it, reprocess and prune hold it exclusive).
 */
export interface RunHold {
  /** Runs left marked running by dead processes, closed as abandoned when the hold was taken. */
  readonly abandonedRuns: readonly number[];
  setRunId(runId: number): void;
  /** Whether the hold is still this run's, read from the database now; once false, false for good. */
  held(): boolean;
  /**
   * Whether a run that lost this hold still writes its own end: on PostgreSQL losing it means the server ended the
   * session, not (as on SQLite) that another run took over and closed its books. Absent: false.
   */
  readonly closesOwnRunWhenLost?: boolean;
  /** Tells `listener` once when a check or a heartbeat finds the hold gone. */
  onLost(listener: (err: LockLostError) => void): void;
  release(): Awaitable<void>;
}

export interface WriterTask {
  id: number;
  operation: Operation;
  page?: number;
  /** The ids of its input's due pages after it: an answer ending the list settles them with it (outcome-ops PastLast). */
  laterPages?: readonly number[];
}

/** One API call as the client tells it (its ApiCallInfo), as the store logs it in `api_calls`. */
export interface CallFacts {
  operation: string;
  method: string;
  path: string;
  status: number | null;
  latencyMs: number;
}

/** A 200 read through its operation's contract (ApiOk): `data` is stored as read, `raw` archived as received. */
export interface ReadAnswer {
  data: unknown;
  raw: string;
  credits: CreditCounters | null;
  call: CallFacts;
  /** Listed records its contract set aside (no identity): stored as answer_anomalies rows. */
  setAside: readonly SetAsideRecord[];
  /** Its page ends the input's list (the contract's lastPage); absent where no list is read (tests' answers). */
  lastPage?: boolean;
}

/** A paid 200 its contract could not read (the client's ApiSchemaError): archived apart, for reprocess. */
export interface UnreadAnswer {
  call: CallFacts;
  code: string;
  message: string;
  raw: string;
  credits: CreditCounters | null;
}

/** One failed HTTP attempt (the client's ApiError; only a paid body it could not read has `credits`). */
export interface FailedAttempt {
  call: Partial<CallFacts>;
  code: string;
  credits?: CreditCounters | null;
}

/** The run's rate gate (rate/rate-gate.ts on SQLite; shared by every worker on PostgreSQL). */
export interface RunGate {
  setRequestsPerMinute(requestsPerMinute: number | null): void;
  take(signal?: AbortSignal): Promise<void>;
  pause(ms: number): void;
  readonly totalPausedMs: number;
  /** Told of a long wait a 429's pause explains (on PostgreSQL also one another worker or an earlier run met), so the run says why it waits. */
  onWait: ((wait: GateWait) => void) | null;
}


export interface RunStore {
  /** The file, or the URL with its password hidden: what messages name. */
  readonly name: string;
  /** On SQLite its writes check that the run still holds the lock (lockGuardedLedger, sqlite-run-store.ts). */
  readonly ledger: RunLedger;
  readonly runs: RunRecords;
  readonly calls: CallHistory;
  readonly hold: RunHold;
  /** Ledger timestamps' ISO time: the server's on PostgreSQL, so workers agree on freshness; else this host's. */
  now?(): string;
  /** The due tasks of a job for this run; `signal` ends a wait for work other workers hold. */
  dueTasks(filter: RunnableFilter, signal?: AbortSignal): DueTasks;
  /**
   * The run's writer of call outcomes, started once the run has its id; `onFatal` is told once if a commit fails;
   * `interrupted` (SIGINT, SIGTERM) shortens its wait for a PostgreSQL server gone away.
   */
  openWriter(runId: number, onFatal: (err: unknown) => void, interrupted?: AbortSignal): GroupCommitWriter;
  /**
   * PostgreSQL: waits, within the writer's bound, for a server gone away (a restart) to answer again; false when it did
   * not. The run's end is written after it, as the answers it held are.
   */
  serverBack?(interrupted?: AbortSignal): Promise<boolean>;
  /** The credit guard (on PostgreSQL also within the budget every worker shares); `runKey` is what maxPerRun counts. */
  openCreditGuard(limits: CreditLimits, history: CreditHistory, apiUrl: string, runKey: string): CreditGuard;
  openGate(apiUrl: string): RunGate;
  /** Writes a run's drift counts so far for one operation (they replace earlier ones). */
  saveDrift(runId: number, rows: readonly AnswerDriftRow[]): Awaitable<void>;
  anomalyCounts(runId: number, job: string): Awaitable<Record<AnswerAnomalyKind, number>>;
  /** A job's keepRawDays: drops raw bodies superseded longer ago; what it dropped. */
  pruneJobBodies(job: string, keepDays: number): Awaitable<{ dropped: number; droppedBytes: number }>;
  /** An error as messages give it: mapped to the engine's dataset errors, naming the dataset. */
  describeError(err: unknown): unknown;
  close(): Awaitable<void>;
}
