/**
 * What the soak test asserts about a database that went through faults and SIGKILLs: every task settled, no
 * row twice, nothing half-written, and the same dataset as a clean run (every normalized table read row by row
 * in natural-key order, seen-at and updated-at columns left out).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSoakReader, type SoakReader } from './soak-reader.ts';

/** One check of the soak, printed as a line. */
export interface SoakCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/** The natural key of every table whose rows must never repeat, normalized tables first. */
export const NATURAL_KEYS: Record<string, string[]> = {
  companies: ['url'],
  company_locations: ['company_url', 'position'],
  company_industries: ['company_url', 'position'],
  company_specialities: ['company_url', 'position'],
  company_hashtags: ['company_url', 'position'],
  similar_companies: ['reference_url', 'filter_key', 'company_url'],
  posts: ['post_id'],
  post_media: ['post_id', 'position'],
  jobs: ['url'],
  job_searches: ['search_key'],
  job_search_results: ['search_key', 'job_url'],
  tasks: ['job', 'input_key', 'page'],
  invalid_inputs: ['job', 'file', 'line'],
  // One stored answer per request: an answer that was written is never paid for again.
  raw_responses: ['operation', 'request_key'],
};

/** The tables of the dataset proper (what users query and export). */
export const NORMALIZED_TABLES = Object.keys(NATURAL_KEYS).slice(0, 11);

/** Columns that record when a row was seen, which differ between any two runs. */
const TIME_COLUMNS = new Set(['first_seen_at', 'last_seen_at', 'updated_at']);

/** Every task settled (done or not_found), with the count by status. */
export async function checkTasksSettled(db: SoakReader): Promise<SoakCheck> {
  const rows = (await db.rows<{ status: string; n: number }>('SELECT status, count(*) AS n FROM tasks GROUP BY status ORDER BY status')).map((r) => ({ ...r, n: Number(r.n) }));
  const unsettled = rows.filter((r) => r.status !== 'done' && r.status !== 'not_found').reduce((n, r) => n + r.n, 0);
  return {
    name: 'every task done or not_found',
    ok: unsettled === 0 && rows.length > 0,
    detail: rows.map((r) => `${r.status} ${r.n}`).join(', ') || 'no tasks',
  };
}

/** count(*) against count of distinct natural keys, for every table in NATURAL_KEYS. */
export async function checkNoDuplicates(db: SoakReader): Promise<SoakCheck> {
  const bad: string[] = [];
  let tables = 0;
  for (const [table, key] of Object.entries(NATURAL_KEYS)) {
    const cols = key.map((c) => `"${c}"`).join(', ');
    const n = await db.count(`SELECT count(*) FROM "${table}"`);
    const d = await db.count(`SELECT count(*) FROM (SELECT DISTINCT ${cols} FROM "${table}") AS keys`);
    tables++;
    if (n !== d) bad.push(`${table}: ${n} rows, ${d} distinct (${key.join(', ')})`);
  }
  return { name: 'no duplicate rows (count = count distinct on every natural key)', ok: bad.length === 0, detail: bad.join('; ') || `${tables} tables` };
}

/**
 * Nothing half-written: every done task has its raw answer and api_calls row, and no answer or wrong-shape body
 * stands without its task's outcome; on SQLite also integrity and foreign keys (PostgreSQL enforces its keys).
 */
export async function checkConsistency(db: SoakReader): Promise<SoakCheck> {
  const problems = db.engine === 'sqlite' ? await sqliteIntegrity(db) : [];
  const noRaw = await db.count(`SELECT count(*) FROM tasks t WHERE t.status = 'done'
      AND NOT EXISTS (SELECT 1 FROM raw_responses r WHERE r.task_id = t.id AND r.error_code IS NULL)`);
  if (noRaw > 0) problems.push(`${noRaw} done tasks without their raw answer`);
  const noCall = await db.count(`SELECT count(*) FROM tasks t WHERE t.status = 'done' AND NOT EXISTS (SELECT 1 FROM api_calls c WHERE c.task_id = t.id AND c.status = 200)`);
  if (noCall > 0) problems.push(`${noCall} done tasks without their api_calls row`);
  // A task due again is pending (or deferred, failed) beside the answers of earlier runs: only an answer of
  // the task's own current run without the task done would be half-written.
  const orphanRaw = await db.count(`SELECT count(*) FROM raw_responses r WHERE r.error_code IS NULL AND NOT EXISTS (SELECT 1 FROM tasks t
      WHERE t.id = r.task_id AND (t.status = 'done' OR t.run_id IS DISTINCT FROM r.run_id))`);
  if (orphanRaw > 0) problems.push(`${orphanRaw} raw answers whose task is not done`);
  // A paid body of the wrong shape (error_code set) is never an answer: its task failed in the same transaction.
  const orphanRejected = await db.count(`SELECT count(*) FROM raw_responses r WHERE r.error_code IS NOT NULL AND NOT EXISTS (SELECT 1 FROM tasks t
      WHERE t.id = r.task_id AND (t.status = 'failed' OR t.run_id IS DISTINCT FROM r.run_id))`);
  if (orphanRejected > 0) problems.push(`${orphanRejected} wrong-shape bodies whose task did not fail`);
  const name = `nothing half-written (${db.engine === 'sqlite' ? 'integrity, foreign keys, ' : ''}every done task with its raw answer and call)`;
  return { name, ok: problems.length === 0, detail: problems.join('; ') || 'ok' };
}

async function sqliteIntegrity(db: SoakReader): Promise<string[]> {
  const problems: string[] = [];
  const integrity = (await db.rows<{ integrity_check: string }>('PRAGMA integrity_check')).map((r) => r.integrity_check).join('; ');
  if (integrity !== 'ok') problems.push(`integrity_check: ${integrity}`);
  const fk = await db.rows('PRAGMA foreign_key_check');
  if (fk.length > 0) problems.push(`${fk.length} foreign key violations`);
  return problems;
}

/**
 * Every normalized table as one JSON line per row (time columns left out, rows in natural-key order), read on
 * one read-only connection: `exportSql` ran each statement in a child process, 22 of them a quarter of a
 * second each (5.6 s of the short soak's 15), and the soak's promise is about the rows, not the export.
 */
export async function datasetLines(locator: string): Promise<Map<string, string[]>> {
  const db = await openSoakReader(locator);
  try {
    const tables = new Map<string, string[]>();
    for (const table of NORMALIZED_TABLES) {
      const columns = (await db.columns(table)).filter((c) => !TIME_COLUMNS.has(c));
      const order = NATURAL_KEYS[table]!.map((c) => `"${c}"`).join(', ');
      const rows = await db.rows<Record<string, unknown>>(`SELECT ${columns.map((c) => `"${c}"`).join(', ')} FROM "${table}" ORDER BY ${order}`);
      tables.set(table, [JSON.stringify(columns), ...rows.map((row) => JSON.stringify(columns.map((c) => row[c])))]);
    }
    return tables;
  } finally {
    await db.close();
  }
}

/** The soak's dataset against the clean run's, table by table; each side's lines are left in outDir to look at. */
export async function checkSameDataset(soakDb: string, cleanDb: string, outDir: string): Promise<SoakCheck> {
  const mine = await datasetLines(soakDb);
  const clean = await datasetLines(cleanDb);
  const differ: string[] = [];
  let total = 0;
  for (const table of NORMALIZED_TABLES) {
    const aLines = mine.get(table)!;
    const bLines = clean.get(table)!;
    writeFileSync(join(outDir, `soak-${table}.jsonl`), aLines.join('\n') + '\n');
    writeFileSync(join(outDir, `clean-${table}.jsonl`), bLines.join('\n') + '\n');
    total += aLines.length - 1;
    const first = aLines.findIndex((line, i) => line !== bLines[i]);
    if (first === -1 && aLines.length === bLines.length) continue;
    const at = first === -1 ? aLines.length : first;
    differ.push(`${table} (${aLines.length - 1} vs ${bLines.length - 1} rows; first difference at line ${at + 1})`);
  }
  return {
    name: "dataset equal to a clean run's (every normalized table, seen-at/updated-at left out)",
    ok: differ.length === 0 && total > 0,
    detail: differ.length > 0 ? `differs: ${differ.join('; ')}` : `${NORMALIZED_TABLES.length} tables, ${total} rows identical`,
  };
}
