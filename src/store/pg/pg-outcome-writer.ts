/**
 * The run's writer on PostgreSQL: group commits one after another, pipelined on the run's own connection. An outcome
 * resolves once its group commits, so a killed worker loses only its calls in flight.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { OutcomeOp } from '../outcome-ops.ts';
import { GroupCommitWriter } from '../group-commit-writer.ts';
import { isConflict } from './transaction.ts';
import { connectionLostError, pgRefusal } from './open.ts';
import { RESULT_WRITER_DEFAULTS } from '../result-writer.ts';
import { createPgGroupCommit, type PlannedGroup } from './pg-group-commit.ts';

export const PG_WRITER_DEFAULTS = {
  /**
   * Times a group the server ended in a deadlock or serialization failure with another worker's is written again
   * (rows go in key order, so this is the backstop): it holds paid answers, which a failed run would pay for again.
   */
  conflictRetries: 3,
  /**
   * How long a server gone away (a restart: sessions ended, connections refused, then "starting up") has to take a
   * connection again before the writer stops: it holds paid answers, which a failed run would pay for again. Two
   * minutes: a package upgrade, a slow shutdown checkpoint or a failover takes longer than 15 s.
   */
  serverBackWithinMs: 120_000,
  /**
   * After a stop signal (SIGTERM), the most the writer still waits for the server: it ends its wait, and the run prints
   * its summary, well within the CLI's grace (SHUTDOWN_GRACE_MS, 40 s), which exits without one.
   */
  afterSignalMs: 15_000,
  /** Pause between connection attempts while the server is away. */
  reconnectPauseMs: 200,
  /** Times in a row, no group committed between, the writer waits for the server: one that keeps dropping it stops the run. */
  lostRetries: 3,
} as const;

/** The writer's waits for a server gone away, each PG_WRITER_DEFAULTS' by default; `interrupted`: the run's stop signal. */
export type PgWriterWaits = { serverBackWithinMs?: number | undefined; afterSignalMs?: number; interrupted?: AbortSignal | undefined };

/**
 * Waits for a server gone away (a restart) to answer again, as the writer does: true once it does, false past
 * `withinMs` (after the run's stop signal, afterSignalMs at most) or on another error.
 */
export async function serverBack(pool: pg.Pool, withinMs: number, interrupted?: AbortSignal): Promise<boolean> {
  const deadline = performance.now() + (interrupted?.aborted ? Math.min(withinMs, PG_WRITER_DEFAULTS.afterSignalMs) : withinMs);
  return (await whileServerAway(async () => Boolean(await pool.query('SELECT 1')), () => deadline)) ?? false;
}

/** `attempt` until it answers (undefined: ask again) while the server is away: null past `deadline()` or on another error. */
async function whileServerAway<T>(attempt: () => Promise<T | undefined>, deadline: () => number, onError = () => undefined as void): Promise<T | null> {
  for (;;) {
    try {
      const answer = await attempt();
      if (answer !== undefined) return answer;
    } catch (err) {
      onError();
      if (!connectionLostError(err, '')) return null;
    }
    if (performance.now() >= deadline()) return null;
    await sleep(PG_WRITER_DEFAULTS.reconnectPauseMs);
  }
}

/** Each transaction's fate by its id, in order (a null id: null). */
const XACT_STATUS_SQL = 'SELECT txid_status(x) AS status FROM unnest($1::bigint[]) WITH ORDINALITY AS u(x, n) ORDER BY n';

/** A group sent in the writer's transaction; `xid` its transaction's id once known (its COMMIT may go from then on). */
type OpenGroup = { ops: readonly OutcomeOp[]; releases: Array<() => void>; xid?: string };

export class PgOutcomeWriter extends GroupCommitWriter {
  /** Groups handed over while a commit is under way, with their waiters: they go together in the next one. */
  private waiting: Array<{ ops: readonly OutcomeOp[]; release: () => void }> = [];
  /** The commits going on, one after the other; resolves once nothing is waiting. */
  private committing: Promise<void> | null = null;
  /** Wakes the commit loop waiting on the last group's COMMIT when a group is handed over. */
  private arrived: (() => void) | null = null;
  private readonly groups: ReturnType<typeof createPgGroupCommit>;
  /** The writer's own connection from its first commit to close(), so its prepared statements stay prepared. */
  private connection: pg.PoolClient | null = null;
  /** The connection the server ended while the writer waited for answers (a restart, pg_terminate_backend). */
  private ended: pg.PoolClient | null = null;
  /** Stops watching the connection's end: a pooled connection outlives its writer. */
  private unwatch: () => void = () => undefined;
  /** Connections lost in a row with no group committed since (lostRetries bounds it). */
  private losses = 0;
  /** When the run's stop signal came (performance.now()), or null. */
  private signalledAt: number | null = null;

  constructor(
    private readonly pool: pg.Pool,
    runId: number,
    onFatal: (err: unknown) => void,
    now?: () => string,
    private readonly waits: PgWriterWaits = {},
  ) {
    super(runId, onFatal, RESULT_WRITER_DEFAULTS.maxBatch, now);
    this.groups = createPgGroupCommit(runId);
    const signalled = () => (this.signalledAt ??= performance.now());
    if (waits.interrupted?.aborted) signalled();
    else waits.interrupted?.addEventListener('abort', signalled, { once: true });
  }

  async drain(): Promise<void> {
    this.flush();
    while (this.committing) await this.committing;
  }

  async close(): Promise<void> {
    await this.drain();
    // Back to the pool as the others are: one query at a time.
    if (this.connection) pipelined(this.connection, false).release();
    this.connection = null;
    this.unwatch();
  }

  /**
   * Groups arriving while one commits go together next (up to maxBatch outcomes): with the server a round trip away,
   * a commit per turn of the event loop would queue groups of one or two answers behind each other.
   */
  protected commitGroup(ops: readonly OutcomeOp[], release: () => void): void {
    this.waiting.push({ ops, release });
    this.arrived?.();
    this.startCommitting();
  }

  /** Starts the commits unless under way; a group handed over as they finished starts them again. */
  private startCommitting(): void {
    this.committing ??= this.commitWaiting().finally(() => {
      this.committing = null;
      if (this.waiting.length > 0) this.startCommitting();
    });
  }

  /**
   * A group's BEGIN, reads and rows go once the one before has sent its COMMIT, so the server writes one group while
   * this process records the next's history; its waiters go once its COMMIT is answered.
   */
  private async commitWaiting(): Promise<void> {
    /** The groups sent and not yet known committed, in order: after a failure, only one whose COMMIT went may be. */
    const open: OpenGroup[] = [];
    let last: Promise<void> | null = null;
    try {
      let client = await this.connect();
      while (!this.error && (this.waiting.length > 0 || last)) {
        if (this.waiting.length === 0) {
          // Until a group is handed over or `last` is answered, whichever is first (a failure is seen below).
          await Promise.race([last!.catch(() => undefined), new Promise<void>((resolve) => (this.arrived = resolve))]);
          this.arrived = null;
          if (this.waiting.length > 0) continue;
          await last;
          last = null;
          continue;
        }
        // Ended with nothing of it unanswered: the next group goes on a new one, not lost with it (paid answers in flight).
        if (!last && this.ended === client) client = await this.connect();
        const { group, releases } = this.take();
        const sent: OpenGroup = { ops: group.ops, releases };
        open.push(sent);
        const started = this.groups.start(client, group);
        // The group before is answered first (its COMMIT went before these reads): its failure stops this group before
        // its COMMIT is sent, and is the one said (this group's reads then fail only as that transaction is aborted).
        await last;
        const read = await started.reads;
        sent.xid = await started.xid;
        const { committed } = await started.commit(read);
        last = committed.then(() => {
          open.splice(open.indexOf(sent), 1);
          this.committed(sent.ops);
          for (const release of releases) release();
        });
        // Awaited by the next group, or once none waits; a failure found first elsewhere must not go unhandled.
        last.catch(() => undefined);
      }
    } catch (err) {
      // The writer's connection rolled back and let go. A group's COMMIT goes only once the one before is committed, so
      // the open groups are uncommitted but one whose COMMIT a lost connection left unanswered (partsAfter asks).
      this.letGoConnection();
      const parts = await this.partsAfter(err, open, { conflicts: 0 });
      if (parts) await this.commitInParts(parts);
      else this.fail(err);
    }
    // After a failure nothing more is written: the groups left are let go (GroupCommitWriter.error says why).
    const waiting = this.error ? this.waiting.splice(0).map((g) => g.release) : [];
    for (const release of [...open.flatMap((g) => g.releases), ...waiting]) release();
  }

  /**
   * Commits `todo` a group at a time: again whole when it met another worker's transaction (up to conflictRetries in
   * all), in parts when refused on a value; stops the writer on anything else.
   */
  private async commitInParts(todo: Array<readonly OutcomeOp[]>): Promise<void> {
    const tries = { conflicts: 0 };
    for (let ops = todo.shift(); ops; ops = todo.shift()) {
      const sent: OpenGroup = { ops, releases: [] };
      try {
        const client = await this.connect();
        const started = this.groups.start(client, this.groups.plan(ops));
        const read = await started.reads;
        sent.xid = await started.xid;
        await (await started.commit(read)).committed;
        this.committed(ops);
      } catch (err) {
        this.letGoConnection();
        const parts = await this.partsAfter(err, [sent], tries);
        if (!parts) return this.fail(err);
        todo.unshift(...parts);
      }
    }
  }

  /**
   * What of `open` is written again after `err`: whole after a conflict, in parts after a refused value; after a lost
   * connection, once the server is back, all but a group it says committed. Null: the writer stops.
   */
  private async partsAfter(err: unknown, open: readonly OpenGroup[], tries: { conflicts: number }): Promise<Array<readonly OutcomeOp[]> | null> {
    if (isConflict(err)) return ++tries.conflicts <= PG_WRITER_DEFAULTS.conflictRetries ? open.map((g) => g.ops) : null;
    if (!connectionLostError(err, '')) return this.refusedAlone(open.flatMap((g) => g.ops), err);
    if (++this.losses > PG_WRITER_DEFAULTS.lostRetries) return null;
    const statuses = await this.statusesOf(open, performance.now() + (this.waits.serverBackWithinMs ?? PG_WRITER_DEFAULTS.serverBackWithinMs));
    if (!statuses) return null;
    const parts: Array<readonly OutcomeOp[]> = [];
    for (const [i, g] of open.entries()) {
      if (statuses[i] === 'committed') this.committed(g.ops);
      else parts.push(g.ops);
    }
    return parts;
  }

  /**
   * What became of each group's transaction, once the server answers on a new connection (a restart refuses, then
   * is "starting up"): 'committed' or 'aborted' (txid_status; aborted for a group whose COMMIT never went), asked
   * again while one is still ending. Null when not known by `deadline`: the writer stops.
   */
  private statusesOf(open: readonly OpenGroup[], deadline: number): Promise<Array<string | null> | null> {
    const xids = open.map((g) => g.xid ?? null);
    return whileServerAway(async () => {
      const { rows } = await (await this.connect()).query<{ status: string | null }>(XACT_STATUS_SQL, [xids]);
      const statuses = rows.map((r, i) => (xids[i] === null ? 'aborted' : r.status));
      if (!statuses.includes('in progress')) return statuses.includes(null) ? null : statuses;
    }, () => Math.min(deadline, this.afterSignal()), () => this.letGoConnection());
  }

  /** When a wait for the server ends once the run was told to stop (Infinity until it is). */
  private afterSignal(): number {
    return this.signalledAt === null ? Infinity : this.signalledAt + (this.waits.afterSignalMs ?? PG_WRITER_DEFAULTS.afterSignalMs);
  }

  /** The writer's connection: a new one when the server ended the one it held (`ended`). */
  private async connect(): Promise<pg.PoolClient> {
    if (this.connection && this.ended === this.connection) this.letGoConnection();
    if (this.connection) return this.connection;
    const client = pipelined(await this.pool.connect(), true);
    const onEnd = () => (this.ended = client);
    this.unwatch();
    client.once('end', onEnd);
    this.unwatch = () => void client.off('end', onEnd);
    return (this.connection = client);
  }

  /**
   * The writer's connection after a failure is closed, not pooled: batches sent behind the failed one may still be
   * answered, and those answers would go to the pool's next query. Closing it rolls its transaction back.
   */
  private letGoConnection(): void {
    this.connection?.release(new Error('the writer stopped on a failure: its connection is closed'));
    this.connection = null;
  }

  protected override committed(ops: readonly OutcomeOp[]): void {
    this.losses = 0;
    super.committed(ops);
  }

  protected refusal(err: unknown): string | null {
    return pgRefusal(err);
  }

  /** The waiting groups that go together next (up to maxBatch outcomes), their history's reads planned. */
  private take(): { group: PlannedGroup; releases: Array<() => void> } {
    let count = this.waiting[0]!.ops.length;
    let n = 1;
    while (n < this.waiting.length && count + this.waiting[n]!.ops.length <= RESULT_WRITER_DEFAULTS.maxBatch) count += this.waiting[n++]!.ops.length;
    const groups = this.waiting.splice(0, n);
    return { group: this.groups.plan(groups.flatMap((g) => g.ops)), releases: groups.map((g) => g.release) };
  }
}

function pipelined(client: pg.PoolClient, on: boolean): pg.PoolClient {
  (client as unknown as { pipeline: boolean }).pipeline = on;
  return client;
}
