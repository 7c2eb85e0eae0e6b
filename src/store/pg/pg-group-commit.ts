/**
 * A group of outcomes written on PostgreSQL in one transaction, storing what writing them one by one would: ids in
 * order, the later answer's values, a task settled twice as the second left it (attempts summed).
 */
import type pg from 'pg';
import { CALL_HEAD, callValues } from '../api-calls.ts';
import { RAW_HEAD, rawValues } from '../raw-archive.ts';
import { pgBodyText } from '../raw-body.ts';
import { listEndWrites, rawInputOf, settlementsOf, storedAnswerOf, type OutcomeOp, type Settlement } from '../outcome-ops.ts';
import type { ListPage, RowWrite } from '../../operations/stored-rows.ts';
import { listPageOf } from '../ingest/tables.ts';
import { createPgAnswerStore, firstPass, type FirstPass } from './pg-answer-store.ts';
import { ANOMALY_HEAD } from '../answer-anomalies.ts';
import { PgRowBatch, roundsByKey } from './pg-row-batch.ts';
import { pipelineStatements, valuesStatements, type BoundStatement } from './pg-pipeline.ts';
import { CHANGES_HEAD, ChangeRecorder, changeValues, type AnswerWrites } from '../history/record-changes.ts';
import { readPg, type ReadStep, type Reads } from '../read-steps.ts';
import { pgValues, type Statement } from '../../statement.ts';
import { STORE_TYPES } from './reader-values.ts';

type PaidOp = Extract<OutcomeOp, { kind: 'success' | 'rejected' }>;

/** A group's outcomes and the history's reads of the keys they write, planned before anything is read. */
export interface PlannedGroup {
  ops: readonly OutcomeOp[];
  paid: readonly PaidOp[];
  /** The keys the history reads: the answers' rows, and the pages of lists they (or 404s) answer. */
  candidates: ReadonlyArray<RowWrite | ListPage>;
  /** Each paid outcome's first pass of its rows (null for a rejected one), made once for the reads and the write. */
  firsts: ReadonlyArray<FirstPass | null>;
  /** The history reader's statements for these keys (plannedReads): they do not depend on what they read. */
  planned: readonly FoldedStep[];
}

/** A read whose statement is SQL read by column (not raw, not plain text): it folds into the group's round trip. */
type FoldedStep = ReadStep & { sql: Statement };

/** A group under way in the run writer's pipeline (start): its history's reads, and what sends the rest. */
export interface StartedGroup {
  /** The rows of the history's reads, sent behind BEGIN. */
  reads: Promise<unknown[][]>;
  /** The transaction's id, answered with the reads: asked after a COMMIT left unanswered by a lost connection (txid_status). */
  xid: Promise<string>;
  /** Sends the history's rows and COMMIT once `read` (the reads' rows) came; resolves once sent, with its COMMIT's answer. */
  commit(read: readonly unknown[][]): Promise<{ committed: Promise<void> }>;
}

/** The writer of one run's groups: `plan` and `start` for pg-outcome-writer.ts. */
export function createPgGroupCommit(runId: number) {
  const answers = createPgAnswerStore();
  return { plan: planGroup, start: (client: pg.ClientBase, group: PlannedGroup) => startGroup(runId, answers, client, group) };
}

/**
 * Sends BEGIN and the history's reads behind the previous group's COMMIT; the rows go at once, written while the
 * history is recorded from the reads, unless an answer reads a stored value back: then once the reads are answered.
 */
function startGroup(runId: number, answers: ReturnType<typeof createPgAnswerStore>, client: pg.ClientBase, group: PlannedGroup): StartedGroup {
  /** Resolves once the rows are sent (a stored value read back first), with their answer. */
  const sendRows = async (history: ChangeRecorder | null) => {
    const batch = new PgRowBatch();
    // Each paid answer's rows (its history recorded first unless `history` is null). Its anomalies name its raw body by
    // its place in the one INSERT (rawBodiesSql), so both go together.
    const anomalies: Anomaly[] = [];
    for (const [i, op] of group.paid.entries()) {
      if (op.kind !== 'success') continue;
      const found = (await answers.collect(client, batch, storedAnswerOf(op, runId, 0), history, group.firsts[i] ?? undefined)).anomalies;
      anomalies.push(...found.map(([, ...row]) => ({ n: i + 1, taskId: op.taskId, row })));
    }
    return { written: reportedLater(pipelineStatements(client, rowStatements(runId, group, batch, anomalies), STORE_TYPES)) };
  };
  const readSql = group.planned.map((step) => ({ text: step.sql.postgres, values: pgValues(step.sql, step.params) }));
  const begun = pipelineStatements(client, ['BEGIN', XID_BY_KEYS_ONLY, ...readSql], STORE_TYPES);
  const reads = reportedLater(begun.then((r) => r.slice(2).map((x) => x.rows)));
  const xid = reportedLater(begun.then((r) => String(r[1]!.rows[0].xid)));
  const early = group.firsts.every((first) => first === null || first.asked.size === 0);
  const rowsSent = early ? reportedLater(sendRows(null)) : null;
  async function commit(read: readonly unknown[][]): Promise<{ committed: Promise<void> }> {
    // The group's history, having read what its keys hold (`read`: the rows of the group's reads).
    const history = new ChangeRecorder();
    replayReads(history.prefetch(group.candidates), group.planned, read);
    if (rowsSent) {
      // The rows are sent: every key they write was read above. What a list's page reads more (changes this run
      // recorded) the group's rows do not touch.
      const { written } = await rowsSent;
      try {
        for (const [i, op] of group.paid.entries()) {
          if (op.kind !== 'success') continue;
          const { stored, list } = group.firsts[i]!;
          await readPg({ client }, history.record({ writes: stored.writes, runId, taskId: op.taskId, at: op.at, endsList: op.endsList, list }));
        }
      } catch (err) {
        // After rows the server refused, a read fails only as the transaction is aborted (25P02): the refusal says why.
        throw await written.then(() => err, (refused: unknown) => refused);
      }
    }
    const { written } = await (rowsSent ?? sendRows(history));
    // A 404 ending a paged list writes no row: its list's keys were read with the group's (candidates).
    for (const end of listEnds(runId, group.ops)) await readPg({ client }, history.record(end));
    const ending = pipelineStatements(client, [...historyStatements(history), 'COMMIT'], STORE_TYPES);
    // In a transaction a refused statement aborted, COMMIT answers ROLLBACK: the refusal (answered first) is the failure.
    const committed = Promise.all([written, ending]).then(([, results]) => {
      if (results.at(-1)!.command !== 'COMMIT') throw new Error('internal: the group\'s transaction was rolled back');
    });
    return { committed: reportedLater(committed) };
  }
  return { reads, xid, commit };
}

/** `promise`, whose failure the writer or the commit awaits and reports later: till then it must not go unhandled. */
function reportedLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/**
 * The transaction's id, and seqscans off for it (SET LOCAL, in the same statement: one fewer a group). A group finds
 * every row it reads, deletes or checks by key, but a plan cached (after five runs) while a table was small, before
 * its first ANALYZE, read the whole table each group: 18-20 ms a statement at 22,000 media rows.
 */
const XID_BY_KEYS_ONLY = "SELECT txid_current()::text AS xid, set_config('enable_seqscan', 'off', true) AS by_keys_only";

/** What the group's answers would write, and the history's statements that read what those keys hold now (sent before the group). */
function planGroup(ops: readonly OutcomeOp[]): PlannedGroup {
  const paid = ops.filter((op): op is PaidOp => op.kind === 'success' || op.kind === 'rejected');
  const firsts = paid.map((op) => (op.kind === 'success' ? firstPass(op) : null));
  const ends = ops.flatMap((op) => (op.kind === 'not_found' && op.request ? (listPageOf(op.request) ?? []) : []));
  const candidates = [...firsts.flatMap((first) => first?.stored.writes ?? []), ...firsts.flatMap((first) => first?.list ?? []), ...ends];
  return { ops, paid, candidates, firsts, planned: plannedReads(new ChangeRecorder().prefetch(candidates)) };
}

/** The history's inputs for the group's 404s that end a paged list. */
function listEnds(runId: number, ops: readonly OutcomeOp[]): AnswerWrites[] {
  return ops.flatMap((op) => (op.kind === 'not_found' && op.request ? (listEndWrites({ request: op.request, runId, taskId: op.taskId, at: op.at }) ?? []) : []));
}

/**
 * The statements `reads` sends, learned by running it with no rows: a reader whose statements do not depend on the
 * rows read (the history's read of a group's keys) rides in the group's round trip, then is replayed on its rows.
 */
function plannedReads(reads: Reads<unknown>): FoldedStep[] {
  const steps: FoldedStep[] = [];
  for (let step = reads.next(); !step.done; step = reads.next([])) {
    if (step.value.raw || typeof step.value.sql === 'string') throw new Error('internal: only statements read by column fold into a query');
    steps.push(step.value as FoldedStep);
  }
  return steps;
}

/** Runs `reads` again on the rows its planned statements returned, checking it asks the same statements in order. */
function replayReads<T>(reads: Reads<T>, planned: readonly ReadStep[], results: readonly unknown[][]): T {
  let step = reads.next();
  for (let i = 0; !step.done; i++) {
    const p = planned[i];
    if (!p || p.sql !== step.value.sql || JSON.stringify(p.params) !== JSON.stringify(step.value.params)) {
      throw new Error('internal: a folded reader asked other statements than it planned');
    }
    step = reads.next(results[i]!);
  }
  return step.value;
}

/** The group's statements but the history's: bodies with their anomalies, rows, api_calls, task updates. */
function rowStatements(runId: number, group: PlannedGroup, batch: PgRowBatch, anomalies: readonly Anomaly[]): BoundStatement[] {
  return [
    ...rawBodiesSql(group.paid, runId, anomalies),
    ...batch.take(),
    ...valuesStatements(CALL_HEAD, group.ops.flatMap((op) => ('call' in op ? [callValues(op.call)] : []))),
    ...settleSql(runId, group.ops.flatMap(settlementsOf)),
  ];
}

/** An answer's anomaly row, by its body's place in the group's INSERT. */
type Anomaly = { n: number; taskId: number; row: unknown[] };

/** The history's statements for what `history` recorded: changes withdrawn, then those added. */
function historyStatements(history: ChangeRecorder): BoundStatement[] {
  const { changes, withdrawn } = history.take();
  return [
    ...(withdrawn.length > 0 ? [{ text: `DELETE FROM changes WHERE id IN (${withdrawn.map((_, i) => `$${i + 1}`).join(', ')})`, values: withdrawn }] : []),
    ...valuesStatements(CHANGES_HEAD, changes.map(changeValues)),
  ];
}

/**
 * Bodies and their anomalies in one statement: the n-th id is the n-th body's (VALUES order). A body is checked by its
 * task: a mismatch gives NULL, which raw_response_id refuses, so the group fails rather than misfile an anomaly.
 */
function rawBodiesSql(paid: readonly PaidOp[], runId: number, anomalies: readonly Anomaly[]): BoundStatement[] {
  const rows = paid.map((op) => rawValues(rawInputOf(op, runId), { body: pgBodyText(op.body), encoding: null }));
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
