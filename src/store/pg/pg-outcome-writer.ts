/**
 * The run's writer on PostgreSQL: the same group commit as store/result-writer.ts (the outcomes of one turn of
 * the event loop, or `maxBatch` of them, in one transaction: normalized rows, raw body, task status and
 * api_calls row together), committed one group at a time on a connection of the pool, each with a few
 * multi-row statements per table (pg-group-commit.ts). An outcome's promise
 * resolves once its group is committed, so a worker killed at any instant loses at most its in-flight calls.
 */
import type pg from 'pg';
import { withPgClient } from './transaction.ts';
import type { OutcomeOp } from '../outcome-ops.ts';
import { GroupCommitWriter } from '../group-commit-writer.ts';
import { RESULT_WRITER_DEFAULTS } from '../result-writer.ts';
import { createPgGroupCommit } from './pg-group-commit.ts';

export class PgOutcomeWriter extends GroupCommitWriter {
  /** Groups handed over while a commit is under way, with their waiters: they go together in the next one. */
  private waiting: Array<{ ops: readonly OutcomeOp[]; release: () => void }> = [];
  /** The commits going on, one after the other; resolves once nothing is waiting. */
  private committing: Promise<void> | null = null;
  private readonly writeGroup: ReturnType<typeof createPgGroupCommit>;

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
    await this.committing;
  }

  close(): Promise<void> {
    return this.drain();
  }

  /**
   * Commits after the groups flushed before it. The groups that arrive while one commits are committed together
   * next (up to maxBatch outcomes): with the server a round trip away, a commit per turn of the event loop would
   * queue groups of one or two answers behind each other.
   */
  protected commitGroup(ops: readonly OutcomeOp[], release: () => void): void {
    this.waiting.push({ ops, release });
    this.committing ??= this.commitWaiting().finally(() => (this.committing = null));
  }

  private async commitWaiting(): Promise<void> {
    while (this.waiting.length > 0) {
      let count = this.waiting[0]!.ops.length;
      let n = 1;
      while (n < this.waiting.length && count + this.waiting[n]!.ops.length <= this.maxOps) count += this.waiting[n++]!.ops.length;
      const groups = this.waiting.splice(0, n);
      if (!this.error) {
        try {
          await this.commit(groups.flatMap((g) => g.ops));
        } catch (err) {
          this.fail(err);
        }
      }
      for (const g of groups) g.release();
    }
  }

  private async commit(ops: readonly OutcomeOp[]): Promise<void> {
    // BEGIN and COMMIT go inside the group's first and last queries.
    return withPgClient(this.pool, (client) => this.writeGroup(client, ops, true));
  }
}
