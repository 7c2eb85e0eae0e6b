/**
 * The run's writer on PostgreSQL: the same group commit as store/result-writer.ts (the outcomes of one turn of
 * the event loop, or `maxBatch` of them, in one transaction: normalized rows, raw body, task status and
 * api_calls row together), committed one group at a time on a connection of the pool. An outcome's promise
 * resolves once its group is committed, so a worker killed at any instant loses at most its in-flight calls.
 */
import type pg from 'pg';
import type { OutcomeOp } from '../outcome-ops.ts';
import { GroupCommitWriter } from '../group-commit-writer.ts';
import { RESULT_WRITER_DEFAULTS } from '../result-writer.ts';
import type { ApiCallRow } from '../api-calls.ts';
import { requestKeyOf } from '../ingest-request.ts';
import { createPgAnswerStore } from './pg-answer-store.ts';

export class PgOutcomeWriter extends GroupCommitWriter {
  /** The commit going on: groups commit one after the other, in order. */
  private committing: Promise<void> = Promise.resolve();
  private readonly answers = createPgAnswerStore();

  constructor(
    private readonly pool: pg.Pool,
    runId: number,
    onFatal: (err: unknown) => void,
    maxBatch: number = RESULT_WRITER_DEFAULTS.maxBatch,
  ) {
    super(runId, onFatal, maxBatch);
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
      for (const op of ops) await this.write(client, op);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  private async write(client: pg.PoolClient, op: OutcomeOp): Promise<void> {
    const runId = this.runId;
    switch (op.kind) {
      case 'success': {
        const rawResponseId = await saveRaw(client, op, runId, null);
        await this.answers.store(client, { rawResponseId, runId, taskId: op.taskId, operation: op.operation, requestKey: op.requestKey, request: op.request, body: op.body, at: op.at });
        await insertCall(client, op.call);
        return settle(client, op.taskId, runId, op.at, op.attempts, 'done', null, null, null);
      }
      case 'rejected':
        await saveRaw(client, op, runId, op.code);
        await insertCall(client, op.call);
        return settle(client, op.taskId, runId, op.at, op.attempts, 'failed', op.code, op.message.slice(0, 1000), 0);
      case 'not_found':
        await insertCall(client, op.call);
        return settle(client, op.taskId, runId, op.at, op.attempts, 'not_found', null, op.note, null);
      case 'past_last_page':
        return settle(client, op.taskId, runId, op.at, 0, 'not_found', null, `past the last page (${op.lastPage})`, null);
      case 'attempt_failed':
        return insertCall(client, op.call);
      case 'failed':
        return settle(client, op.taskId, runId, op.at, op.attempts, 'failed', op.code, op.message.slice(0, 1000), op.retryable ? 1 : 0);
    }
  }
}

/** The body as received, as text (body_encoding NULL: PostgreSQL compresses large values itself). */
async function saveRaw(client: pg.PoolClient, op: Extract<OutcomeOp, { kind: 'success' | 'rejected' }>, runId: number, errorCode: string | null): Promise<number> {
  const { rows } = await client.query<{ id: string }>(`INSERT INTO raw_responses (operation, request_key, request_json, body, body_encoding, received_at, run_id, task_id, error_code)
    VALUES ($1, $2, $3, $4, NULL, $5, $6, $7, $8) RETURNING id`,
  [op.operation, op.requestKey ?? requestKeyOf(op.request), JSON.stringify(op.request), op.body, op.at, runId, op.taskId, errorCode]);
  return Number(rows[0]!.id);
}

async function insertCall(client: pg.PoolClient, r: ApiCallRow): Promise<void> {
  await client.query(`INSERT INTO api_calls (run_id, task_id, operation, method, path, status, error_code, latency_ms, total_credits, credits_used, credits_remaining, at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
  [r.runId, r.taskId, r.operation, r.method, r.path, r.status, r.errorCode, r.latencyMs, r.totalCredits, r.creditsUsed, r.creditsRemaining, r.at]);
}

/** The task's outcome, as ledger.ts's markDone / markNotFound / markFailed write it. */
async function settle(
  client: pg.PoolClient, id: number, runId: number, at: string, attempts: number,
  status: 'done' | 'not_found' | 'failed', code: string | null, message: string | null, retryable: number | null,
): Promise<void> {
  await client.query(`UPDATE tasks SET status = $1, attempts = attempts + $2, last_error_code = $3, last_error = $4, retryable = $5,
    updated_at = $6, completed_at = CASE WHEN $1 = 'failed' THEN NULL ELSE $6::timestamptz END, run_id = $7 WHERE id = $8`,
  [status, attempts, code, message, retryable, at, runId, id]);
}
