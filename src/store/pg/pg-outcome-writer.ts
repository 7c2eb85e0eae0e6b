/**
 * The run's writer on PostgreSQL: store/result-writer.ts's group commit, a group at a time on the run's own connection,
 * in one round trip. An outcome resolves once its group is committed: a killed worker loses only its in-flight calls.
 */
import type pg from 'pg';
import type { OutcomeOp } from '../outcome-ops.ts';
import { GroupCommitWriter } from '../group-commit-writer.ts';
import { releaseAfterFailure } from './transaction.ts';
import { RESULT_WRITER_DEFAULTS } from '../result-writer.ts';
import { createPgGroupCommit, type PlannedGroup } from './pg-group-commit.ts';

export class PgOutcomeWriter extends GroupCommitWriter {
  /** Groups handed over while a commit is under way, with their waiters: they go together in the next one. */
  private waiting: Array<{ ops: readonly OutcomeOp[]; release: () => void }> = [];
  /** The commits going on, one after the other; resolves once nothing is waiting. */
  private committing: Promise<void> | null = null;
  private readonly writeGroup: ReturnType<typeof createPgGroupCommit>;
  /** The writer's own connection from its first commit to close(), so its prepared statements stay prepared. */
  private connection: pg.PoolClient | null = null;
  /** The commit loop's groups taken from `waiting` (the one being written first), while a group is being written. */
  private inFlight: Pending[] | null = null;

  constructor(
    private readonly pool: pg.Pool,
    runId: number,
    onFatal: (err: unknown) => void,
    private readonly maxOps: number = RESULT_WRITER_DEFAULTS.maxBatch,
    now?: () => string,
  ) {
    super(runId, onFatal, maxOps, now);
    this.writeGroup = createPgGroupCommit(runId);
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
  }

  /**
   * Groups arriving while one commits go together next (up to maxBatch outcomes): with the server a round trip away,
   * a commit per turn of the event loop would queue groups of one or two answers behind each other.
   */
  protected commitGroup(ops: readonly OutcomeOp[], release: () => void): void {
    this.waiting.push({ ops, release });
    this.startCommitting();
    this.readAhead();
  }

  /**
   * While a group is written with no reads riding in it, groups handed over meanwhile send their reads behind it
   * (pipelined): the server runs them after its COMMIT, so they see what it wrote, and they are answered by their turn.
   */
  private readAhead(): void {
    const inFlight = this.inFlight;
    if (!inFlight || inFlight.length !== 1 || !this.connection) return;
    const next = this.take();
    next.read = this.writeGroup.read(this.connection, next.group);
    // Its failure is the commit loop's to report, when it comes to this group.
    next.read.catch(() => undefined);
    inFlight.push(next);
  }

  /** Starts the commits unless under way; a group handed over as they finished starts them again. */
  private startCommitting(): void {
    this.committing ??= this.commitWaiting().finally(() => {
      this.committing = null;
      if (this.waiting.length > 0) this.startCommitting();
    });
  }

  /**
   * Commits the waiting groups one after the other on one connection, each in one round trip that also reads, before
   * its COMMIT, what the history needs of the next group: two round trips only for the first after an idle spell.
   */
  private async commitWaiting(): Promise<void> {
    /** Taken from `waiting`, not yet let go: the group being committed and the one whose reads ride with it. */
    const taken: Pending[] = [];
    try {
      // In pipeline mode: node-postgres sends a query without waiting for the one before.
      const client = (this.connection ??= pipelined(await this.pool.connect(), true));
      while (!this.error && (taken.length > 0 || this.waiting.length > 0)) {
        if (taken.length === 0) taken.push(this.take());
        const current = taken[0]!;
        const read = await (current.read ?? this.writeGroup.read(client, current.group));
        const next = this.nextOf(taken);
        // Once this group is sent with none of the next's reads in it, groups handed over meanwhile read ahead.
        const onSent = () => (this.inFlight = next ? null : taken);
        const nextRead = await this.writeGroup.write(client, current.group, read, { ownTransaction: true, next: next?.group ?? null, onSent })
          .finally(() => (this.inFlight = null));
        if (next) next.read = Promise.resolve(nextRead);
        for (const release of taken.shift()!.releases) release();
      }
    } catch (err) {
      await this.dropConnection();
      this.fail(err);
    }
    // After a failure nothing more is written: the groups left are let go (GroupCommitWriter.error says why).
    for (const release of [...taken.flatMap((p) => p.releases), ...this.waiting.splice(0).map((g) => g.release)]) release();
  }

  /**
   * The group whose reads ride in the one being written: those waiting now, taken (null: none waits). A group that
   * read ahead during the last write is not one: its reads are sent, and it is written next.
   */
  private nextOf(taken: Pending[]): Pending | null {
    if (taken.length > 1 || this.waiting.length === 0) return null;
    const next = this.take();
    taken.push(next);
    return next;
  }

  /** After a failed group: the writer's connection rolled back and let go (releaseAfterFailure). */
  private async dropConnection(): Promise<void> {
    const client = this.connection;
    this.connection = null;
    if (client) await releaseAfterFailure(pipelined(client, false));
  }

  /** The waiting groups that go together next (up to maxBatch outcomes), their history's reads planned. */
  private take(): Pending {
    let count = this.waiting[0]!.ops.length;
    let n = 1;
    while (n < this.waiting.length && count + this.waiting[n]!.ops.length <= this.maxOps) count += this.waiting[n++]!.ops.length;
    const groups = this.waiting.splice(0, n);
    return { group: this.writeGroup.plan(groups.flatMap((g) => g.ops)), read: null, releases: groups.map((g) => g.release) };
  }
}

/** Groups taken to be committed together, and what the history read for them (null: not read yet). */
interface Pending {
  group: PlannedGroup;
  read: Promise<unknown[][]> | null;
  releases: Array<() => void>;
}

function pipelined(client: pg.PoolClient, on: boolean): pg.PoolClient {
  (client as unknown as { pipeline: boolean }).pipeline = on;
  return client;
}
