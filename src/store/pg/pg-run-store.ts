/**
 * The run store on PostgreSQL. Each worker holds the dataset lock shared for its life; workers share a job by claiming
 * due tasks (SKIP LOCKED, a lease per input), and a worker's `runs` row is live while its session holds the lock.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { callHistory } from '../api-calls.ts';
import { anomalyCountsReads } from '../answer-anomalies.ts';
import { driftParams, SAVE_DRIFT_SQL } from '../answer-drift.ts';
import { readPg } from '../read-steps.ts';
import type { RunnableFilter, TaskRow } from '../ledger.ts';
import type { DueTasks, RunHold, RunStore } from '../run-store.ts';
import type { OpenRunOptions } from '../dataset-store.ts';
import { claimDue, createTaskClaims, newWorkerId, TASK_CLAIM_DEFAULTS, type ClaimFilter } from './coordination/task-claims.ts';
import { LockLostError } from '../run-lock.ts';
import { DatabaseError } from '../errors.ts';
import { connectionLostError, openPgStore, pgReadOnlyError, serverErrorOf } from './open.ts';
import { createPgLedger } from './pg-ledger.ts';
import { pruneRawBodiesPg } from './raw-prune.ts';
import { PG_WRITER_DEFAULTS, PgOutcomeWriter, serverBack } from './pg-outcome-writer.ts';
import { SharedRunGate } from './coordination/shared-rate-gate.ts';
import { END_RUN_SQL, endRunParams } from '../runs.ts';
import { pgValues } from '../../statement.ts';
import { SharedCreditGuard } from './shared-credit-guard.ts';
import { SharedCreditBudget } from './coordination/shared-credit-budget.ts';
import { recordAbandonedRunFigures, startWorkerRun } from './coordination/worker-runs.ts';
import { holdShared, type DatasetHold } from './dataset-lock.ts';

export const PG_RUN_STORE_DEFAULTS = {
  /** How often a worker with nothing to claim looks again while other workers still hold due inputs. */
  idlePollMs: 500,
  /** How long settled inputs wait to be given back together (their leases stay meanwhile; nobody needs them). */
  giveBackDelayMs: 100,
  /** Settled inputs given back at once, whatever the delay: a claim's worth (concurrency 16 x queue depth 4). */
  giveBackBatch: 64,
} as const;

/**
 * Opens the dataset for a run, its lock held shared (LockedError under reprocess or prune); only the hold and the
 * writer keep a connection.
 */
export async function openPgRunStore(options: OpenRunOptions & { url: string }): Promise<RunStore> {
  const store = await openPgStore(options.url);
  const { pool } = store;
  let datasetHold: DatasetHold | null = null;
  let now: () => string;
  try {
    datasetHold = await holdShared(pool, `the database ${store.shownUrl}`);
    now = await serverClock(pool);
  } catch (err) {
    await datasetHold?.release();
    await store.close();
    throw toPgUseError(err, store.shownUrl);
  }
  // The run's start: the failed tasks it settles itself are not claimed again in this run.
  const startedAt = now();
  const workerId = newWorkerId();
  const guards: SharedCreditGuard[] = [];
  const hold = workerHold(datasetHold, store.shownUrl);
  return {
    name: store.shownUrl,
    ledger: createPgLedger(pool, hold.backendPid),
    runs: {
      async start(run) {
        const started = await startWorkerRun(pool, { ...run, backendPid: hold.backendPid });
        hold.abandonedRuns.push(...started.abandoned);
        await recordAbandonedRunFigures(pool, started.abandoned);
        return { id: started.runId, runKey: started.runKey };
      },
      end: async (id, fields) => void (await pool.query(END_RUN_SQL.postgres, pgValues(END_RUN_SQL, endRunParams(id, fields)))),
    },
    calls: callHistory((reads) => readPg({ client: pool }, reads)),
    hold,
    now,
    dueTasks: (filter, signal) => claimedDueTasks(pool, filter, { leaseMs: options.leaseMs ?? TASK_CLAIM_DEFAULTS.leaseMs, startedAt }, hold, signal),
    openWriter: (runId, onFatal, interrupted) => new PgOutcomeWriter(pool, runId, onFatal, now, { serverBackWithinMs: options.serverBackWithinMs, interrupted }),
    serverBack: (interrupted) => serverBack(pool, options.serverBackWithinMs ?? PG_WRITER_DEFAULTS.serverBackWithinMs, interrupted),
    openGate: (apiUrl) => new SharedRunGate(pool, apiUrl, options.rateWindowMs, { longWaitMs: options.rateLongWaitMs }),
    openCreditGuard(limits, history, apiUrl, runKey) {
      const guard = new SharedCreditGuard(limits, history, new SharedCreditBudget(pool, { apiUrl, runKey, workerId }), { longWaitMs: options.creditLongWaitMs });
      guards.push(guard);
      return guard;
    },
    async saveDrift(runId, rows) {
      for (const r of rows) await pool.query(SAVE_DRIFT_SQL.postgres, driftParams(runId, r));
    },
    anomalyCounts: (runId, job) => readPg({ client: pool }, anomalyCountsReads(runId, job)),
    // Under the worker's shared hold: safe beside other workers writing newer bodies (see pg/raw-prune.ts).
    pruneJobBodies: (job, keepDays) => pruneRawBodiesPg(pool, { keepDays, jobs: [job] }),
    describeError: (err) => toPgUseError(err, store.shownUrl),
    async close() {
      for (const g of guards) await g.close().catch(() => undefined);
      // Released by the run before (open-run.ts); again here for a store closed without a run.
      await hold.release();
      await store.close();
    },
  };
}

/**
 * The server's time now as ISO text, its offset measured once (good to a round trip): workers on hosts whose clocks
 * disagree stamp the ledger alike and agree on what is fresh, as on when a lease ends.
 */
async function serverClock(pool: pg.Pool): Promise<() => string> {
  const sentMs = Date.now();
  const { rows } = await pool.query<{ now: Date }>('SELECT clock_timestamp() AS now');
  const offsetMs = new Date(rows[0]!.now).getTime() - (sentMs + Date.now()) / 2;
  return () => new Date(Date.now() + offsetMs).toISOString();
}

type WorkerHold = RunHold & {
  abandonedRuns: number[];
  readonly backendPid: number;
  /** Stops the run as a lost lock does: a lease of this worker ended while it was not looking (frozen past it). */
  lose(err: LockLostError): void;
};

/**
 * A worker's hold: the dataset lock held shared on one session, whose backend pid marks the run live. A session the
 * server ends takes the lock with it, and the run stops, as a SQLite run whose lock was taken over does.
 */
function workerHold(hold: DatasetHold, shownUrl: string): WorkerHold {
  let lost: LockLostError | null = null;
  const listeners: Array<(err: LockLostError) => void> = [];
  const lose = (err: LockLostError) => {
    if (lost) return;
    lost = err;
    for (const l of listeners) l(err);
  };
  hold.onLost((err) => lose(new LockLostError(`the database ${shownUrl} ended the session holding this run's lock (${err.message}); the run stopped, run again`)));
  return {
    abandonedRuns: [],
    backendPid: hold.backendPid,
    lose,
    setRunId: () => undefined,
    held: () => lost === null,
    closesOwnRunWhenLost: true,
    onLost: (listener) => void listeners.push(listener),
    release: () => hold.release(),
  };
}

/** The claims' due rule as dueLeft counts it: $1 job, $2 runId, $3 freshSince, $4 refresh, $5 failedBefore, $6 plannedSince. */
const DUE_LEFT = claimDue({ job: '$1', runId: '$2', freshSince: '$3', refresh: '$4', failedBefore: '$5', plannedSince: '$6' });

/** A job's due tasks as this worker claims them; with nothing free while others hold due inputs, it polls till they return. */
function claimedDueTasks(pool: pg.Pool, filter: RunnableFilter, opts: { leaseMs: number; startedAt: string }, hold: WorkerHold, signal?: AbortSignal): DueTasks {
  const claims = createTaskClaims(pool, { workerId: newWorkerId(), leaseMs: opts.leaseMs, holderPid: hold.backendPid });
  const renewal = claims.keepRenewed();
  // Tasks this run planned, or a later run or any run still going did, are claimable: claims go by job, not by this run.
  const claim: ClaimFilter = {
    job: filter.job, runId: null, freshSince: filter.freshSince, refresh: filter.refresh, failedBefore: opts.startedAt, plannedSince: filter.runId,
  };
  /** Due tasks of inputs this worker does not hold (its own in-flight inputs are not waited for by polling). */
  const dueLeft = async () => {
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM tasks t WHERE ${DUE_LEFT} AND NOT (t.input_key = ANY($7::text[]))`,
      [claim.job, null, claim.freshSince, claim.refresh, claim.failedBefore, claim.plannedSince, [...held]]);
    return rows[0]!.n;
  };
  /**
   * Aborted at this worker's next settle: what its own inputs leave due (pages after a failed one) is claimable then.
   * Made only while a claim waits on it: an abort makes a DOMException, too dear for every settled task.
   */
  let nextSettle: AbortController | null = null;
  /** The highest task id claimed: each claim reads the job from there on (a full one only when nothing is ahead). */
  let after: number | null = null;
  /** Inputs claimed and not given back yet: a run that stops gives them back at once rather than let their lease run out. */
  const held = new Set<string>();
  const giveBack = givenBackTogether((inputKeys: string[]) => claims.release(filter.job, inputKeys));
  return {
    wholeInputs: true,
    async next(limit): Promise<TaskRow[]> {
      for (;;) {
        // Forward from the last claim first; from the start when nothing is left ahead (inputs given back, leases run out).
        let rows = after === null ? [] : await claims.claim({ ...claim, afterId: after }, limit);
        if (rows.length === 0) rows = await claims.claim(claim, limit);
        for (const r of rows) after = Math.max(after ?? r.id, r.id);
        for (const r of rows) held.add(r.inputKey);
        if (rows.length > 0) return rows.map(({ leaseUntil: _lease, ...row }) => row);
        if (signal?.aborted) return [];
        // Only its own inputs hold due work: done once they settle, else woken by the next settle to claim what they
        // leave due (polling would delay the run's end by up to idlePollMs).
        const ownOnly = (await dueLeft()) === 0;
        if (ownOnly && held.size === 0) return [];
        const wakers = [...(ownOnly ? [(nextSettle ??= new AbortController()).signal] : []), ...(signal ? [signal] : [])];
        await sleep(PG_RUN_STORE_DEFAULTS.idlePollMs, undefined, { signal: AbortSignal.any(wakers) }).catch(() => undefined);
      }
    },
    settled(inputKeys) {
      for (const k of inputKeys) held.delete(k);
      giveBack.add(inputKeys);
      nextSettle?.abort();
      nextSettle = null;
    },
    async holds(inputKey) {
      if (await claims.holds(filter.job, inputKey)) return true;
      hold.lose(new LockLostError(`this worker's lease on input ${inputKey} of job ${filter.job} ended while it was not running `
        + `(stopped or suspended past ${opts.leaseMs} ms): another worker may be calling it; the run stopped without calling it, run again`));
      return false;
    },
    async close() {
      renewal.stop();
      await giveBack.flush();
      await claims.release(filter.job, [...held]);
      held.clear();
    },
  };
}

/** Inputs given back together (giveBackDelayMs, giveBackBatch); not awaited: a failure stops the run at the next give-back or at close. */
function givenBackTogether(release: (inputKeys: string[]) => Promise<void>): { add(inputKeys: readonly string[]): void; flush(): Promise<void> } {
  let waiting: string[] = [];
  let timer: NodeJS.Timeout | null = null;
  let sending: Promise<void> = Promise.resolve();
  let failure: unknown = null;
  const send = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    const keys = waiting;
    waiting = [];
    if (keys.length > 0) sending = sending.then(() => release(keys)).catch((err: unknown) => void (failure ??= err));
  };
  return {
    add(inputKeys) {
      if (failure) throw failure;
      waiting.push(...inputKeys);
      if (waiting.length >= PG_RUN_STORE_DEFAULTS.giveBackBatch) send();
      else timer ??= setTimeout(send, PG_RUN_STORE_DEFAULTS.giveBackDelayMs);
    },
    async flush() {
      send();
      await sending;
      if (failure) throw failure;
    },
  };
}

/** A failure of the open dataset, naming it by its shown URL (SQLite's toDatabaseUseError). */
function toPgUseError(err: unknown, shownUrl: string): unknown {
  const known = connectionLostError(err, shownUrl) ?? pgReadOnlyError(err, shownUrl);
  if (known) return known;
  const server = err instanceof DatabaseError ? null : serverErrorOf(err);
  // Only the server's errors (SQLSTATE: five characters) are the dataset's; the others keep their own kind.
  if (!server || !/^[0-9A-Z]{5}$/.test(server.code)) return err;
  return new DatabaseError('DB_WRITE_FAILED', shownUrl, `database ${shownUrl}: ${server.message} [${server.code}]`, { cause: err });
}
