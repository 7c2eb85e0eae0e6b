/**
 * A group of outcomes written on PostgreSQL in one round trip: bodies with their anomalies, rows, api_calls, task
 * updates, history (its reads come before, or ride in the group before). It stores what writing the outcomes one by
 * one would: ids in order, the later answer's values, a task settled twice as the second left it (attempts summed).
 */
import type pg from 'pg';
import { CALL_HEAD, callValues } from '../api-calls.ts';
import { RAW_HEAD, rawValues } from '../raw-archive.ts';
import { rawInputOf, settlementOf, type OutcomeOp, type Settlement } from '../outcome-ops.ts';
import type { RowWrite } from '../../operations/stored-rows.ts';
import type { ReadStep } from '../read-steps.ts';
import { createPgAnswerStore, firstPass, type FirstPass } from './pg-answer-store.ts';
import { ANOMALY_HEAD } from '../answer-anomalies.ts';
import { PgRowBatch, roundsByKey } from './pg-row-batch.ts';
import { valuesStatements, type BoundStatement } from './pg-statements.ts';
import { pipelineStatements } from './pg-pipeline.ts';
import { CHANGES_HEAD, ChangeRecorder, changeValues } from '../history/record-changes.ts';
import { foldedReadSql, plannedReads, replayReads } from './pg-folded-reads.ts';
import { STORE_TYPES } from './reader-values.ts';

type PaidOp = Extract<OutcomeOp, { kind: 'success' | 'rejected' }>;

/** A group's outcomes and the history's reads of the keys they write, planned before anything is read. */
export interface PlannedGroup {
  ops: readonly OutcomeOp[];
  paid: readonly PaidOp[];
  candidates: readonly RowWrite[];
  /** Each paid outcome's first pass of its rows (null for a rejected one), made once for the reads and the write. */
  firsts: ReadonlyArray<FirstPass | null>;
  /** The history reader's statements for these keys (pg-folded-reads.ts): they do not depend on what they read. */
  planned: readonly ReadStep[];
}

export interface WriteOptions {
  ownTransaction: boolean;
  /** The group whose history reads ride in this one, before its COMMIT. */
  next?: PlannedGroup | null;
  /** Called once the group's statements are sent (all of them, COMMIT included), before their answer. */
  onSent?: () => void;
}

/** The writer of one run's groups: `plan`, `read` and `write` for pg-outcome-writer.ts, or all three in one call. */
export function createPgGroupCommit(runId: number) {
  const answers = createPgAnswerStore();

  /**
   * The group written in one round trip (a stored value an answer reads back costs one more, rare), with `next`'s
   * reads riding in it before COMMIT: the state `next` starts from is the one this group leaves. `next`'s rows.
   */
  async function write(client: pg.ClientBase, group: PlannedGroup, read: readonly unknown[][], options: WriteOptions): Promise<unknown[][]> {
    const tx = options.ownTransaction ? beginningLazily(client) : { client, begun: () => true };
    const { paid, ops } = group;
    const batch = new PgRowBatch();
    const history = new ChangeRecorder();
    replayReads(history.prefetch(group.candidates), group.planned, read);
    // Each answer's anomalies name its raw body by its place in the one INSERT (rawBodiesSql), so both go together.
    const anomalies: Array<{ n: number; taskId: number; row: unknown[] }> = [];
    for (const [i, op] of paid.entries()) {
      if (op.kind !== 'success') continue;
      const input = {
        rawResponseId: 0, runId, taskId: op.taskId, operation: op.operation, requestKey: op.requestKey, request: op.request, answer: op.answer, setAside: op.setAside, at: op.at,
      };
      const found = (await answers.collect(tx.client, batch, input, history, group.firsts[i] ?? undefined)).anomalies;
      anomalies.push(...found.map(([, ...row]) => ({ n: i + 1, taskId: op.taskId, row })));
    }
    const { changes, withdrawn } = history.take();
    const nextReads = options.next ? foldedReadSql(options.next.planned) : [];
    const tail = options.ownTransaction ? ['COMMIT'] : [];
    const sending = pipelineStatements(client, [
      tx.begun() ? null : 'BEGIN',
      ...rawBodiesSql(paid, runId, anomalies),
      ...batch.take(),
      ...valuesStatements(CALL_HEAD, ops.flatMap((op) => ('call' in op ? [callValues(op.call)] : []))),
      ...settleSql(runId, ops.flatMap((op) => settlementOf(op) ?? [])),
      withdrawn.length > 0 ? { text: `DELETE FROM changes WHERE id IN (${withdrawn.map((_, i) => `$${i + 1}`).join(', ')})`, values: withdrawn } : null,
      ...valuesStatements(CHANGES_HEAD, changes.map(changeValues)),
      ...nextReads,
      ...tail,
    ], STORE_TYPES);
    options.onSent?.();
    const results = await sending;
    return results.slice(results.length - tail.length - nextReads.length, results.length - tail.length).map((r) => r.rows);
  }

  /** The group's reads alone (planGroup's), in one round trip (none when it reads nothing). */
  async function read(client: pg.ClientBase, group: PlannedGroup): Promise<unknown[][]> {
    return (await pipelineStatements(client, foldedReadSql(group.planned), STORE_TYPES)).map((r) => r.rows);
  }

  /** Writes a group in the caller's transaction, or (`ownTransaction`) in one it opens and commits: reads, then the rest. */
  const writeGroup = async (client: pg.ClientBase, ops: readonly OutcomeOp[], ownTransaction = false) => {
    const group = planGroup(ops);
    await write(client, group, await read(client, group), { ownTransaction });
  };
  return Object.assign(writeGroup, { plan: planGroup, read, write });
}

/** What the group's answers would write, and the history's statements that read what those keys hold now (sent before the group). */
function planGroup(ops: readonly OutcomeOp[]): PlannedGroup {
  const paid = ops.filter((op): op is PaidOp => op.kind === 'success' || op.kind === 'rejected');
  const firsts = paid.map((op) => (op.kind === 'success' ? firstPass(op) : null));
  const candidates = firsts.flatMap((first) => first?.stored.writes ?? []);
  return { ops, paid, candidates, firsts, planned: plannedReads(new ChangeRecorder().prefetch(candidates)) };
}

/**
 * `client` sending BEGIN before the first query made through it: an answer that reads a stored value back (or the
 * day order's first read) does so inside the group's transaction; otherwise BEGIN goes with the group's statements.
 */
function beginningLazily(client: pg.ClientBase): { client: pg.ClientBase; begun: () => boolean } {
  let begun = false;
  const lazy = new Proxy(client, {
    get(target, prop) {
      if (prop !== 'query') {
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      }
      const query = (...args: unknown[]) => (target.query as (...a: unknown[]) => Promise<unknown>)(...args);
      return (...args: unknown[]) => {
        if (begun) return query(...args);
        begun = true;
        const beginning = target.query('BEGIN');
        // On a connection in pipeline mode (the run's writer's) BEGIN goes ahead of them, once, unawaited (its
        // failure, a lost connection, fails them too). One query at a time otherwise (node-postgres deprecates queueing).
        if (!(target as unknown as { pipeline: boolean }).pipeline) return beginning.then(() => query(...args));
        beginning.catch(() => undefined);
        return query(...args);
      };
    },
  });
  return { client: lazy, begun: () => begun };
}

/**
 * The bodies as received, as text, with their anomalies in the same statement: an INSERT's rows take ids in VALUES
 * order, so the n-th id is the n-th body's. An anomaly's body is checked by its task: one out of place gives NULL,
 * which raw_response_id refuses, so the group fails rather than file an anomaly under another body.
 */
function rawBodiesSql(paid: readonly PaidOp[], runId: number, anomalies: ReadonlyArray<{ n: number; taskId: number; row: unknown[] }>): BoundStatement[] {
  const rows = paid.map((op) => rawValues(rawInputOf(op, runId), { body: op.body, encoding: null }));
  if (anomalies.length === 0) return valuesStatements(RAW_HEAD, rows);
  // One statement for the bodies (a group's, far under the limit), which the anomalies' CTE numbers.
  const [raw] = valuesStatements(RAW_HEAD, rows, ' RETURNING id, task_id') as [BoundStatement];
  const values = [...raw.values];
  const param = (v: unknown) => `$${values.push(v)}`;
  const tuples = anomalies.map((a) => `((SELECT id FROM numbered WHERE n = ${a.n} AND task_id = ${param(a.taskId)}::bigint), ${a.row.map(param).join(', ')})`);
  return [{
    text: `WITH raw AS (${raw.text}),
  numbered AS (SELECT id, task_id, row_number() OVER (ORDER BY id) AS n FROM raw)
${ANOMALY_HEAD} VALUES ${tuples.join(', ')}`,
    values,
  }];
}


/** The settlement's columns and their types: the first row of a VALUES list names them, the casts type them. */
const SETTLE_COLUMNS: ReadonlyArray<[keyof Settlement, string]> = [
  ['id', 'bigint'], ['status', 'text'], ['attempts', 'integer'], ['code', 'text'], ['message', 'text'], ['retryable', 'smallint'], ['at', 'timestamptz'],
];

/** The tasks' outcomes, one UPDATE per round of distinct tasks (an UPDATE ... FROM changes a row once). */
function settleSql(runId: number, settlements: readonly Settlement[]): BoundStatement[] {
  return roundsByKey(settlements, (s) => String(s.id)).map((round) => {
    const values: unknown[] = [runId];
    for (const s of round) for (const [k] of SETTLE_COLUMNS) values.push(s[k]);
    return { text: settleText(round.length), values };
  });
}

/** The settle's text for `rows` tasks, built once per row count. */
function settleText(rows: number): string {
  let text = settleTexts.get(rows);
  if (text !== undefined) return text;
  let n = 1;
  const tuples = Array.from({ length: rows }, () => `(${SETTLE_COLUMNS.map(([, type]) => `$${++n}::${type}`).join(', ')})`);
  text = `UPDATE tasks AS t SET status = v.status, attempts = t.attempts + v.attempts, last_error_code = v.code, last_error = v.message,
    retryable = v.retryable, updated_at = v.at, completed_at = CASE WHEN v.status = 'failed' THEN NULL ELSE v.at END, run_id = $1::bigint
  FROM (VALUES ${tuples.join(', ')}) AS v(${SETTLE_COLUMNS.map(([k]) => k).join(', ')})
  WHERE t.id = v.id`;
  settleTexts.set(rows, text);
  return text;
}

const settleTexts = new Map<number, string>();
