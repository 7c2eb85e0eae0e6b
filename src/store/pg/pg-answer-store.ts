/**
 * Stores one 200 body on PostgreSQL, in the caller's transaction, as store/store-answer.ts does on SQLite: the
 * operation's contract reads it, its spec maps it to rows (spec.rows, the same pure function), and they are
 * written with the statements of store/ingest/tables.ts in PostgreSQL's dialect: INSERT ... ON CONFLICT DO
 * UPDATE per table key, a set replaced by DELETE then INSERT. Values go in as `copy` converts them.
 */
import type pg from 'pg';
import { parseJsonBody } from '../../api/json-body.ts';
import { readUsableAnswer } from '../../api/schemas.ts';
import { specOf } from '../../operations/index.ts';
import { rowCount, type Row, type RowContext, type RowWrite } from '../../operations/stored-rows.ts';
import type { SqlValue } from '../../operations/stored-values.ts';
import { networkHost } from '../../urls/network-host.ts';
import { setAsideAnomalies, type AnomalySource } from '../answer-anomalies.ts';
import { pgValueConverters } from '../copy-dataset.ts';
import type { IngestRequest } from '../ingest-request.ts';
import { TABLE_STATEMENTS } from '../ingest/tables.ts';
import { isoPostDate, readPostDate, type DayOrder } from '../ingest/post-date.ts';

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/**
 * SQLite's statement in PostgreSQL's dialect: numbered parameters, and LEAST/GREATEST for the two-argument
 * min/max, their stored column named by its table (PostgreSQL finds a bare name ambiguous beside `excluded`).
 */
export function pgStatementOf(sql: string): string {
  const table = /INSERT INTO\s+(\w+)/i.exec(sql)?.[1];
  let n = 0;
  return sql
    .replace(/\?/g, () => `$${++n}`)
    .replace(/\bmin\((\w+),/g, `LEAST(${table}.$1,`)
    .replace(/\bmax\((\w+),/g, `GREATEST(${table}.$1,`);
}

interface TableStatement {
  sql: string;
  columns: readonly string[];
  convert: Array<(value: unknown) => unknown>;
}

const statements = new Map<string, TableStatement>();
function statementOf(table: string): TableStatement {
  let s = statements.get(table);
  if (s) return s;
  const sqlite = Object.hasOwn(TABLE_STATEMENTS, table) ? TABLE_STATEMENTS[table]! : undefined;
  if (!sqlite) throw new Error(`internal: no statement for table ${table}`);
  const converters = pgValueConverters(table);
  s = { sql: pgStatementOf(sqlite.sql), columns: sqlite.columns, convert: sqlite.columns.map((c) => converters.get(c) ?? ((v) => v)) };
  statements.set(table, s);
  return s;
}

/** posts.posted_on's day order, as post-date-order.ts learns it on SQLite; a proof found fills the ambiguous days. */
const NN_NN_YYYY = `posted_raw ~ '^[0-9]{2}-[0-9]{2}-[0-9]{4}$'`;
const FIRST = 'CAST(substr(posted_raw, 1, 2) AS INTEGER)';
const SECOND = 'CAST(substr(posted_raw, 4, 2) AS INTEGER)';
const AMBIGUOUS = `${NN_NN_YYYY} AND ${FIRST} BETWEEN 1 AND 12 AND ${SECOND} BETWEEN 1 AND 12 AND ${FIRST} <> ${SECOND}`;
const YEAR = 'substr(posted_raw, 7, 4)';
const FILL: Record<DayOrder, string> = {
  dmy: `UPDATE posts SET posted_on = ${YEAR} || '-' || substr(posted_raw, 4, 2) || '-' || substr(posted_raw, 1, 2) WHERE ${AMBIGUOUS}`,
  mdy: `UPDATE posts SET posted_on = ${YEAR} || '-' || substr(posted_raw, 1, 2) || '-' || substr(posted_raw, 4, 2) WHERE ${AMBIGUOUS}`,
};

/** What one answer stored. */
export interface PgStoredAnswer {
  /** Rows inserted or updated, a set's rows each (as SQLite's ingest counts them: reprocess reports it). */
  rows: number;
}

/** One writer of answers per run: it keeps the dataset's day order once read. */
export function createPgAnswerStore() {
  let seen: Record<DayOrder, boolean> | null = null;
  const order = (s: Record<DayOrder, boolean>): DayOrder | null => (s.dmy === s.mdy ? null : s.dmy ? 'dmy' : 'mdy');

  async function dayOrder(client: pg.PoolClient): Promise<Record<DayOrder, boolean>> {
    if (seen) return seen;
    const proves = (cond: string) => client.query<{ e: boolean }>(`SELECT EXISTS (SELECT 1 FROM posts WHERE ${NN_NN_YYYY} AND ${cond} > 12 AND posted_on IS NOT NULL) AS e`);
    seen = { dmy: (await proves(FIRST)).rows[0]!.e, mdy: (await proves(SECOND)).rows[0]!.e };
    return seen;
  }

  /** posts.posted_on for a raw day; a day that proves the order first fills (or clears) the ambiguous ones. */
  async function postedOn(client: pg.PoolClient, raw: unknown): Promise<SqlValue> {
    const s = await dayOrder(client);
    const { proves } = readPostDate(raw);
    if (proves !== null && !s[proves]) {
      s[proves] = true;
      const now = order(s);
      await client.query(now === null ? `UPDATE posts SET posted_on = NULL WHERE ${AMBIGUOUS}` : FILL[now]);
    }
    return isoPostDate(raw, order(s));
  }

  async function writeRow(client: pg.PoolClient, table: string, row: Row): Promise<void> {
    const s = statementOf(table);
    const args: unknown[] = [];
    for (let i = 0; i < s.columns.length; i++) {
      const column = s.columns[i]!;
      const value = table === 'posts' && column === 'posted_on' ? await postedOn(client, row['posted_raw']) : row[column];
      if (value === undefined) throw new Error(`internal: row of ${table} without ${column}`);
      // A bigint (object_urn, ids past 2^53) goes as its digits, which every numeric column and jsonb read as that number.
      args.push(typeof value === 'bigint' ? bigintParam(value, s.convert[i]!) : s.convert[i]!(value));
    }
    await client.query(s.sql, args);
  }

  async function write(client: pg.PoolClient, w: RowWrite): Promise<void> {
    if ('row' in w) return writeRow(client, w.table, w.row);
    const keys = Object.keys(w.owner);
    if (!Object.hasOwn(TABLE_STATEMENTS, w.table) || !keys.every((k) => IDENTIFIER.test(k))) throw new Error(`internal: cannot delete from ${w.table}`);
    await client.query(`DELETE FROM ${w.table} WHERE ${keys.map((k, i) => `${k} = $${i + 1}`).join(' AND ')}`, keys.map((k) => w.owner[k]));
    for (const row of w.rows) await writeRow(client, w.table, row);
  }

  /**
   * Stores one body. spec.rows() asks for stored values synchronously: it runs once to learn which it asks,
   * they are read, and it runs again with them (it is a pure function of its inputs).
   */
  async function store(client: pg.PoolClient, input: AnomalySource & { request: IngestRequest; body: string }): Promise<PgStoredAnswer> {
    const operation = input.request.operation;
    const reading = readUsableAnswer(operation, parseJsonBody(input.body), { raw: input.body });
    const spec = specOf(operation);
    const asked = new Map<string, { table: string; key: Row; column: string }>();
    const known = new Map<string, SqlValue | undefined>();
    const idOf = (table: string, key: Row, column: string) => `${table}\0${column}\0${JSON.stringify(key)}`;
    const ctx: RowContext = {
      seenAt: input.at,
      networkHost: networkHost(),
      stored: (table, key, column) => {
        const id = idOf(table, key, column);
        if (!known.has(id)) asked.set(id, { table, key, column });
        return known.get(id);
      },
    };
    let stored = spec.rows(input.request, reading.answer, ctx);
    if (asked.size > 0) {
      for (const [id, a] of asked) known.set(id, await lookup(client, a.table, a.key, a.column));
      stored = spec.rows(input.request, reading.answer, ctx);
    }
    for (const w of stored.writes) await write(client, w);
    const anomalies = [...setAsideAnomalies(reading.setAside), ...stored.anomalies];
    for (const a of anomalies) {
      await client.query(`INSERT INTO answer_anomalies (raw_response_id, run_id, task_id, operation, request_key, kind, position, path, reason, asked_id, answered_id, at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [input.rawResponseId, input.runId, input.taskId, input.operation, input.requestKey, a.kind, a.position, a.path, a.reason, a.askedId, a.answeredId, input.at]);
    }
    return { rows: rowCount(stored) };
  }

  return { store };
}

async function lookup(client: pg.PoolClient, table: string, key: Row, column: string): Promise<SqlValue | undefined> {
  const keys = Object.keys(key);
  if (![table, column, ...keys].every((n) => IDENTIFIER.test(n))) throw new Error(`internal: cannot read ${table}.${column}`);
  const { rows } = await client.query(`SELECT ${column} AS v FROM ${table} WHERE ${keys.map((k, i) => `${k} = $${i + 1}`).join(' AND ')}`, Object.values(key));
  return rows.length === 0 ? undefined : (rows[0].v as SqlValue);
}

function bigintParam(value: bigint, convert: (value: unknown) => unknown): unknown {
  const n = Number(value);
  return Number.isSafeInteger(n) ? convert(n) : value.toString();
}
