/**
 * A generated dataset of nightly runs for the report's tests and bench: runs with their calls and counters,
 * a ledger of tasks (some failed, with a token in a message), invalid input rows, anomalies and drift that
 * steps up halfway (a change in the service), written through the store's own schema on either engine. Texts
 * that must come out escaped (`<script>`) and redacted (a bearer token, a database password) are in it.
 */
import pg from 'pg';
import { openDatabase } from '../../src/store/open.ts';

/** A secret the page must never show. */
export const PLANTED_SECRET = 'sk_live_PLANTED_9f8e7d';
/** Markup the page must show as text, never as an element. */
export const PLANTED_MARKUP = '<script>alert("x")</script><img src="https://example.invalid/x.png">';

export interface NightlyOptions {
  nights: number;
  /** Calls per night (each a paid answer but the last few). */
  callsPerNight: number;
  /** The last night starts at this time. */
  lastNight: Date;
  invalidRows: number;
}

type Row = Record<string, unknown>;

const DAY_MS = 86_400_000;
const TOTAL_CREDITS = 1_000_000;
// A long job name, as users give them: the pace chart's legend then takes two rows.
const JOBS = [
  { job: 'lookalikes-of-key-accounts', operation: 'similar-companies', tasks: 60, requestsPerMinute: 40 },
  { job: 'post-engagement', operation: 'post-details', tasks: 40, requestsPerMinute: 90 },
];
/** The first nights were run by a release that did not record its jobs' rates (`runs.job_rates` null). */
export const NIGHTS_WITHOUT_RATES = 15;

/** The rows of each table, in insertion order (ids are 1, 2, ... on a new dataset). */
export function nightlyRows(o: NightlyOptions): Record<string, Row[]> {
  const runs: Row[] = [];
  const apiCalls: Row[] = [];
  const drift: Row[] = [];
  let used = 0;
  const first = o.lastNight.getTime() - (o.nights - 1) * DAY_MS;
  const taskCount = JOBS.reduce((n, j) => n + j.tasks, 0);
  for (let night = 0; night < o.nights; night++) {
    const runId = night + 1;
    const start = first + night * DAY_MS;
    const failed = night % 7 === 3 ? 2 : 0;
    const paid = o.callsPerNight - failed;
    for (let c = 0; c < o.callsPerNight; c++) {
      const ok = c < paid;
      if (ok) used += 1 + (c % 2) * 0.5;
      const taskId = 1 + ((night * o.callsPerNight + c) % taskCount);
      apiCalls.push({
        run_id: runId, task_id: taskId, operation: taskId <= JOBS[0]!.tasks ? 'similar-companies' : 'post-details', method: 'POST', path: '/v1/x',
        status: ok ? 200 : 500, error_code: ok ? null : 'HTTP_5XX', latency_ms: 80 + ((night * 7 + c * 13) % 120),
        total_credits: ok ? TOTAL_CREDITS : null, credits_used: ok ? used : null, credits_remaining: ok ? TOTAL_CREDITS - used : null,
        at: new Date(start + 1000 + c * 1500).toISOString(),
      });
    }
    const spent = apiCalls.filter((a) => a.run_id === runId && a.status === 200).reduce((n, a, i) => n + 1 + ((i % 2) * 0.5), 0);
    runs.push({
      jobs: JSON.stringify(JOBS.map((j) => j.job)), started_at: new Date(start).toISOString(), ended_at: new Date(start + 1000 + o.callsPerNight * 1500).toISOString(),
      status: failed > 0 ? 'completed_with_failures' : 'completed', pid: 100, host: 'nightly',
      credits_at_start: TOTAL_CREDITS - used + spent, credits_at_end: TOTAL_CREDITS - used, credits_spent: spent,
      tasks_total: o.callsPerNight, tasks_done: paid - 3, tasks_not_found: 3, tasks_failed: failed, tasks_deferred: 0,
      invalid_rows: night === o.nights - 1 ? o.invalidRows : 0, calls: o.callsPerNight, exit_code: failed > 0 ? 5 : 0, error: null,
      job_rates: night < NIGHTS_WITHOUT_RATES ? null : JSON.stringify(Object.fromEntries(JOBS.map((j) => [j.job, j.requestsPerMinute]))),
    });
    // Drift: `logo` null in a tenth of the answers, then in 60% from halfway (the service changed).
    const seen = paid;
    drift.push({ run_id: runId, operation: 'similar-companies', path: 'data.content[].logo', kind: 'null', count: Math.round(seen * (night < o.nights / 2 ? 0.1 : 0.6)), seen, detail: null });
    drift.push({ run_id: runId, operation: 'post-details', path: 'data.reactions', kind: 'missing', count: night % 5, seen, detail: null });
  }
  const lastStart = first + (o.nights - 1) * DAY_MS;
  const tasks: Row[] = [];
  for (const j of JOBS) {
    for (let i = 0; i < j.tasks; i++) {
      const failed = i % 20 === 7;
      tasks.push({
        job: j.job, operation: j.operation, input_key: `${j.job}-${i}`, page: 1, request_json: JSON.stringify({ i }), input_line: i + 2,
        status: failed ? 'failed' : i % 9 === 0 ? 'not_found' : 'done', retryable: failed ? 0 : null, attempts: 1,
        last_error_code: failed ? 'HTTP_4XX' : null,
        last_error: failed ? `HTTP 400 from the API: {"error":"bad request","echo":"Authorization: Bearer ${PLANTED_SECRET}"} ${PLANTED_MARKUP}` : null,
        created_at: new Date(first).toISOString(), updated_at: new Date(lastStart).toISOString(),
        completed_at: new Date(lastStart - (i % 30) * DAY_MS).toISOString(), run_id: o.nights,
      });
    }
  }
  const invalid: Row[] = [];
  for (let i = 0; i < o.invalidRows; i++) {
    invalid.push({ job: 'lookalikes-of-key-accounts', file: 'data/leads.csv', line: i + 2, field: 'company_url', value: `bad ${i}`, reason: i === 0 ? `not a company page ${PLANTED_MARKUP}` : 'not a company page', run_id: o.nights, created_at: new Date(lastStart).toISOString() });
  }
  const anomalies: Row[] = [{
    raw_response_id: 1, run_id: o.nights, task_id: 1, operation: 'similar-companies', request_key: 'k1', kind: 'no_identity', position: 3,
    path: 'data.content[2]', reason: 'a listed company without url', asked_id: null, answered_id: null, at: new Date(lastStart).toISOString(),
  }];
  return { runs, tasks, api_calls: apiCalls, answer_drift: drift, invalid_inputs: invalid, answer_anomalies: anomalies };
}

/** Writes `tables` into the new dataset `locator` (a SQLite file, created, or an empty PostgreSQL database). */
export async function writeNightlyDataset(locator: string, tables: Record<string, Row[]>): Promise<void> {
  if (/^postgres(ql)?:\/\//.test(locator)) return writePg(locator, tables);
  const database = openDatabase(locator);
  try {
    database.sqlite.transaction(() => {
      for (const [table, rows] of Object.entries(tables)) {
        if (rows.length === 0) continue;
        const columns = Object.keys(rows[0]!);
        const insert = database.sqlite.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
        for (const row of rows) insert.run(...columns.map((c) => row[c]));
      }
    })();
  } finally {
    database.close();
  }
}

async function writePg(url: string, tables: Record<string, Row[]>): Promise<void> {
  // Migrated by the store itself, as a run would.
  const { openPgStore } = await import('../../src/store/pg/open.ts');
  const store = await openPgStore(url);
  try {
    for (const [table, rows] of Object.entries(tables)) {
      if (rows.length === 0) continue;
      const columns = Object.keys(rows[0]!);
      for (let at = 0; at < rows.length; at += 500) {
        const batch = rows.slice(at, at + 500);
        const values: unknown[] = [];
        const tuples = batch.map((row) => `(${columns.map((c) => { values.push(row[c]); return `$${values.length}`; }).join(', ')})`);
        await store.pool.query(`INSERT INTO ${pg.escapeIdentifier(table)} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`, values);
      }
    }
  } finally {
    await store.close();
  }
}
