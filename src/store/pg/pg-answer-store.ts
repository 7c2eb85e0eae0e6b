/**
 * Stores 200 answers on PostgreSQL in the caller's transaction, as store/outcome-ops.ts does on SQLite. A row an
 * answer reads back, and the posted_on fill, flush the group's PgRowBatch first: each answer sees the ones before it.
 */
import type pg from 'pg';
import { rowCount, type ListPage, type Row, type RowContext, type RowWrite, type StoredAnswer as StoredRows } from '../../operations/stored-rows.ts';
import type { SqlValue } from '../../operations/stored-values.ts';
import { networkHost } from '../../urls/canonical.ts';
import { ANOMALY_HEAD, anomalyRow, setAsideAnomalies } from '../answer-anomalies.ts';
import type { StoredAnswer } from '../outcome-ops.ts';
import { readPostDate, type DayOrder } from '../ingest/post-date.ts';
import { answerRows, listPageOf } from '../ingest/tables.ts';
import { learnInTurn, postedOnOf, provenOrders } from '../ingest/post-date-order.ts';
import { IDENTIFIER, PgRowBatch } from './pg-row-batch.ts';
import { ChangeRecorder, writeChanges } from '../history/record-changes.ts';
import { readPg } from '../read-steps.ts';
import { pipelineStatements, valuesStatements } from './pg-pipeline.ts';

/**
 * What an answer stored: rows upserted, a set's each (counted as SQLite's ingest does, for reprocess), and its
 * answer_anomalies rows' parameters.
 */
type PgStoredAnswer = { rows: number; anomalies: unknown[][] };

/** One writer of answers per run: it keeps the dataset's day order once read. */
export function createPgAnswerStore() {
  let seen: Record<DayOrder, boolean> | null = null;

  /**
   * The write as stored: a post's row gets its posted_on (the store's column, not the operation's) for its raw day
   * (post-date-order.ts); the batch goes first where a proof fills the ambiguous days.
   */
  async function completed(client: pg.ClientBase, batch: PgRowBatch, w: RowWrite): Promise<RowWrite> {
    if (w.table !== 'posts' || !('row' in w)) return w;
    const raw = w.row['posted_raw'];
    const s = (seen ??= await readPg({ client }, provenOrders()));
    const { proves } = readPostDate(raw);
    if (proves !== null && !s[proves]) {
      await readPg({ client }, learnInTurn());
      await batch.flush(client);
    }
    return { table: w.table, row: { ...w.row, posted_on: await readPg({ client }, postedOnOf(s, raw)) } };
  }

  /**
   * Adds one body's rows to `batch`. spec.rows() asks for stored values synchronously, so it runs once to learn
   * which, they are read (flushing the batch if it may hold them), and it runs again (it is pure).
   */
  async function collect(client: pg.ClientBase, batch: PgRowBatch, input: StoredAnswer, history: ChangeRecorder | null, first?: FirstPass): Promise<PgStoredAnswer> {
    // The pass with no stored value known, unless the caller made it already (the group's plan, firstPass).
    const { asked, stored: guessed, list } = first ?? firstPass(input);
    const stored = asked.size === 0 ? guessed
      : answerRows(input.request, input.answer, askingContext(input, asked, await readBack(client, batch, asked)));
    // What it changes, read before its rows join the batch (history/record-changes.ts: keys first seen are read now);
    // with no recorder, the caller records it from reads it made before (pg-group-commit.ts's start).
    if (history) {
      await readPg({ client }, history.record({ writes: stored.writes, runId: input.runId ?? null, taskId: input.taskId ?? null, at: input.at, endsList: input.endsList, list }));
    }
    for (const w of stored.writes) await batch.add(client, await completed(client, batch, w));
    return { rows: rowCount(stored), anomalies: [...setAsideAnomalies(input.setAside), ...stored.anomalies].map((a) => anomalyRow(input, a)) };
  }

  /** Stores one body on its own: its rows and anomalies written before it returns. */
  async function store(client: pg.ClientBase, input: StoredAnswer): Promise<PgStoredAnswer> {
    const batch = new PgRowBatch();
    const history = new ChangeRecorder();
    const stored = await collect(client, batch, input, history);
    await readPg({ client }, writeChanges(history.take()));
    await pipelineStatements(client, [...batch.take(), ...valuesStatements(ANOMALY_HEAD, stored.anomalies)]);
    return stored;
  }

  return { collect, store };
}

/** spec.rows() run with no stored value known: its rows, and the stored values it asked for (none: they are final). */
export interface FirstPass {
  stored: StoredRows;
  asked: Map<string, AskedValue>;
  list: ListPage | undefined;
}

type AskedValue = { table: string; key: Row; column: string };

/** Its writes' keys are what the history reads before a group writes; when nothing was asked, collect() reuses it. */
export function firstPass(input: Pick<StoredAnswer, 'request' | 'answer' | 'at'>): FirstPass {
  const asked = new Map<string, AskedValue>();
  const stored = answerRows(input.request, input.answer, askingContext(input, asked, new Map()));
  return { stored, asked, list: listPageOf(input.request) };
}

/** spec.rows()'s context: a stored value from `known`, one not known yet noted in `asked`. */
function askingContext(input: Pick<StoredAnswer, 'at'>, asked: Map<string, AskedValue>, known: ReadonlyMap<string, SqlValue | undefined>): RowContext {
  return {
    seenAt: input.at,
    networkHost: networkHost(),
    stored: (table, key, column) => {
      const id = `${table}\0${column}\0${JSON.stringify(key)}`;
      if (!known.has(id)) asked.set(id, { table, key, column });
      return known.get(id);
    },
  };
}

/** The stored values spec.rows() asked for; a row the batch may hold is written first, so it reads as stored. */
async function readBack(client: pg.ClientBase, batch: PgRowBatch, asked: ReadonlyMap<string, AskedValue>): Promise<Map<string, SqlValue | undefined>> {
  const known = new Map<string, SqlValue | undefined>();
  for (const [id, { table, key, column }] of asked) {
    if (batch.touches(table, key)) await batch.flush(client);
    const keys = Object.keys(key);
    if (![table, column, ...keys].every((n) => IDENTIFIER.test(n))) throw new Error(`internal: cannot read ${table}.${column}`);
    const where = keys.map((k, i) => `${k} = $${i + 1}`).join(' AND ');
    const { rows } = await client.query(`SELECT ${column} AS v FROM ${table} WHERE ${where}`, Object.values(key));
    known.set(id, rows.length === 0 ? undefined : (rows[0].v as SqlValue));
  }
  return known;
}
