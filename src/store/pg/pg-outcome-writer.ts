/**
 * The run's writer on PostgreSQL: the same group commit as store/result-writer.ts (the outcomes of one turn of
 * the event loop, or `maxBatch` of them, in one transaction: normalized rows, raw body, task status and
 * api_calls row together), committed one group at a time on a connection of the pool, each with a few
 * multi-row statements per table (pg-group-commit.ts). An outcome's promise
 * resolves once its group is committed, so a worker killed at any instant loses at most its in-flight calls.
 */
import type pg from 'pg';
import type { OutcomeOp } from '../outcome-ops.ts';
import { GroupCommitWriter } from '../group-commit-writer.ts';
import { RESULT_WRITER_DEFAULTS } from '../result-writer.ts';
import { createPgGroupCommit } from './pg-group-commit.ts';

export class PgOutcomeWriter extends GroupCommitWriter {
  /** The commit going on: groups commit one after the other, in order. */
  private committing: Promise<void> = Promise.resolve();
  private readonly writeGroup: ReturnType<typeof createPgGroupCommit>;

  constructor(
    private readonly pool: pg.Pool,
    runId: number,
    onFatal: (err: unknown) => void,
    maxBatch: number = RESULT_WRITER_DEFAULTS.maxBatch,
  ) {
    super(runId, onFatal, maxBatch);
    this.writeGroup = createPgGroupCommit(runId);
  }

  async drain(): Promise<void> {
    this.flush();
    await this.committing;
  }

  close(): Promise<void> {
    return this.drain();
  }

  /** One transaction on a pooled connection, after the groups flushed before it. */
  protected commitGroup(ops: readonly OutcomeOp[], release: () => void): void {
    this.committing = this.committing.then(async () => {
      if (!this.error) {
        try {
          await this.commit(ops);
        } catch (err) {
          this.fail(err);
        }
      }
      release();
    });
  }

  private async commit(ops: readonly OutcomeOp[]): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await this.writeGroup(client, ops);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
}
