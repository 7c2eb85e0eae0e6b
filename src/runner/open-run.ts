/** A run's lock, row, guard, client, writer, gate and breakers; close() releases them in reverse, even half-open. */
import { hostname } from 'node:os';
import { createApiClient } from '../api/client.ts';
import type { Operation } from '../spec/types.ts';
import { DriftTally, driftLine, type DriftLine } from '../operations/drift.ts';
import type { LockLostError } from '../store/run-lock.ts';
import type { RunStore } from '../store/run-store.ts';
import { CreditGuard } from '../credits/credit-guard.ts';
import { silentLogger, type Logger } from './logger.ts';
import { openStore } from '../store/open-store.ts';
import { settingsOf, type RunOptions } from './run-options.ts';
import { RunStop } from './run-stop.ts';
import { OutageBreaker, UnusableAnswerBreaker } from './breakers.ts';

/** What the run counts across its jobs. */
export interface RunTally {
  /** Failed HTTP attempts, retried or not (the `errors` of the last log line). */
  attemptErrors: number;
  /** The balance before the run's first paid call, once known: balance + spent after the first job worked. */
  creditsAtStart: number | null;
  /** The free balance check is asked once, before the run's first call. */
  balanceAsked: boolean;
  /** Each job's calls per minute as the run set its gate for it (`runs.job_rates`). */
  jobRates: Record<string, number>;
}

/** An open run: what its jobs work with and what closeRun records, released by close() (openLocked's object). */
export type OpenRun = Awaited<ReturnType<typeof openLocked>>;

/** Opens a run; its errors name the database. A lock a live process holds throws LockedError, all opened released. */
export async function openRun(options: RunOptions): Promise<OpenRun> {
  const logger = options.logger ?? silentLogger;
  const dataset = await openStore(options.dbPath);
  // On PostgreSQL the lock's lease is the lease of a worker's claims (how long a dead worker's inputs wait).
  const store = await dataset.openRun({
    leaseMs: options.lockLeaseMs, rateWindowMs: options.sharedRateWindowMs, rateLongWaitMs: options.sharedRateLongWaitMs,
    creditLongWaitMs: options.sharedCreditLongWaitMs, serverBackWithinMs: options.dbServerBackWithinMs,
  });
  const releases: Releases = [() => store.close()];
  try {
    releases.push(() => releaseLock(store, logger));
    return await openLocked(options, logger, store, releases);
  } catch (err) {
    await releaseTo(releases, 0);
    throw store.describeError(err);
  }
}

/** What the run opened, each with its release; released last opened first, down to a depth. */
type Releases = Array<() => unknown>;

async function releaseTo(releases: Releases, depth: number): Promise<void> {
  while (releases.length > depth) await releases.pop()!();
}

async function openLocked(options: RunOptions, logger: Logger, store: RunStore, releases: Releases) {
  // The server's clock on PostgreSQL: under --refresh what any worker settled since the start is fresh.
  const startedAt = store.now?.() ?? new Date().toISOString();
  const { runs, hold: lock } = store;
  const { id: runId, runKey } = await runs.start({
    jobs: options.jobs.map((j) => j.name), startedAt, pid: process.pid, host: hostname(), sharedRunKey: options.sharedRunKey, refresh: options.refresh === true,
  });
  lock.setRunId(runId);
  logger.info('run started', { run: runId, jobs: options.jobs.map((j) => j.name).join(','), db: store.name });
  if (lock.abandonedRuns.length > 0) {
    logger.warn('closed runs whose process ended without finishing them, as abandoned', { runs: lock.abandonedRuns.join(',') });
  }
  const stop = new RunStop();
  // Its lock taken over (suspended past its lease): no call, no commit, no write of its books from here on.
  let lockLost: LockLostError | null = null;
  lock.onLost((err) => {
    lockLost = err;
    stop.stop('fatal', err);
  });
  const callsFrom = releases.length;
  const onAbort = () => stop.stop('interrupted');
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  releases.push(() => options.signal?.removeEventListener('abort', onAbort));
  const settings = settingsOf(options);
  const guard = await creditGuardOf(options, store, runKey);
  // After the calls end (released in reverse): the summary counts each call as charged, not at an estimate.
  releases.push(() => guard.finish());
  const connections = Math.max(...options.jobs.map((j) => options.overrides?.concurrency ?? j.rate.concurrency), 1);
  const client = createApiClient({
    baseUrl: options.api.baseUrl, token: options.api.token, timeoutMs: settings.requestTimeoutMs, connections, retryAfterFallbackMs: options.retryAfterFallbackMs,
  });
  releases.push(() => client.close().catch(() => undefined));
  const writer = store.openWriter(runId, (err) => stop.stop('fatal', err), options.signal);
  // A writer that failed has reported why through stop(); closing it can add nothing.
  releases.push(() => writer.close().catch(() => undefined));
  const tally: RunTally = { attemptErrors: 0, creditsAtStart: null, balanceAsked: false, jobRates: {} };
  return {
    options, settings, logger, runId, startedAt, guard, client, writer, tally,
    /** The dataset, on SQLite or PostgreSQL, through the run's ports (store/run-store.ts): its hold, ledger, runs, calls. */
    store,
    /** The run's stop: a signal, a lost lock, a failed write, credits, an outage... (the first reason wins). */
    stop,
    /** The error of a lock taken over while the run was not running, once that happened. */
    get lockLost() {
      return lockLost;
    },
    gate: store.openGate(options.api.baseUrl),
    outage: new OutageBreaker(stop, settings.outageMinTasks),
    unusable: new UnusableAnswerBreaker(stop, (op) => guard.costOf(op)),
    drift: new RunDrift(store, runId),
    /** Ends the calls (writer and client closed, the guard's charges awaited, the signal let go): what closeRun records is final. */
    closeCalls: () => releaseTo(releases, callsFrom),
    /** Releases everything, in reverse order: the calls (closeCalls), then the lock, then the database. */
    close: () => releaseTo(releases, 0),
  };
}

/** The guard starts from what earlier runs learned: each operation's cost, and the last counters seen. */
async function creditGuardOf(options: RunOptions, store: RunStore, runKey: string): Promise<CreditGuard> {
  const { calls: callLog } = store;
  const costs: Partial<Record<Operation, number>> = {};
  for (const job of options.jobs) costs[job.operation] ??= (await callLog.learnedCost(job.operation)) ?? undefined;
  const history = { costs, lastCreditsUsed: (await callLog.lastCounters())?.creditsUsed ?? null };
  return store.openCreditGuard({ reserve: 0, maxPerRun: null }, history, options.api.baseUrl, runKey);
}

async function releaseLock(store: RunStore, logger: Logger): Promise<void> {
  try {
    await store.hold.release();
  } catch (err) {
    // A lock row left behind names a dead pid and is taken over by the next run; the outcome matters more.
    logger.warn('could not release the run lock', { error: describeError(err, store).message });
  }
}

/** An error as the summary, the log and `runs.error` give it: its code, and a message that names the database. */
export function describeError(err: unknown, store: Pick<RunStore, 'describeError'>): { code: string; message: string } {
  // SQLite's own messages ("database or disk is full") do not say which file: the mapped error does.
  const mapped = store.describeError(err);
  const code = (mapped as { code?: unknown })?.code;
  return {
    code: typeof code === 'string' ? code : 'INTERNAL',
    message: mapped instanceof Error ? mapped.message : String(mapped),
  };
}

/** A run's drift per operation: saved to answer_drift after each job (for `status`), a line per path in the summary. */
export class RunDrift {
  private readonly tallies = new Map<Operation, DriftTally>();
  constructor(
    private readonly store: Pick<RunStore, 'saveDrift'>,
    private readonly runId: number,
  ) {}

  add(operation: Operation, drift: DriftTally): void {
    if (drift.empty) return;
    let tally = this.tallies.get(operation);
    if (!tally) this.tallies.set(operation, (tally = new DriftTally()));
    tally.merge(drift);
  }

  /** Writes the operation's counts so far (they replace those written after an earlier job of the run). */
  async save(operation: Operation): Promise<void> {
    const tally = this.tallies.get(operation);
    if (!tally) return;
    await this.store.saveDrift(this.runId, tally.counts().map((c) => ({ operation, path: c.path, kind: c.kind, count: c.count, seen: c.of, detail: c.detail })));
  }

  lines(): DriftLine[] {
    const byOperation = [...this.tallies].sort(([a], [b]) => (a < b ? -1 : 1));
    return byOperation.flatMap(([operation, tally]) => tally.counts().map((c) => ({ operation, ...c, message: driftLine(operation, c) })));
  }
}
