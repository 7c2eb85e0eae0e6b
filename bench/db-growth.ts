/**
 * How much the database grows per 1,000 stored answers, by operation: the file after 1,000 sandbox answers,
 * and how much of it the raw bodies take gzipped (as stored) and as text (as an earlier build stored them).
 * A refresh of the same lookups grows the file by about the gzipped bodies alone (its rows are updated in
 * place). Then the history: a night (1,000 lookups) against the sandbox's world one day on (ageDays 1), and a
 * refresh of them one day later (ageDays 2, in which some of the values and list members change): how many
 * `changes` rows and bytes (its table and indexes, from dbstat) the refresh adds, and how many of the
 * answers changed anything. Run: `npx tsx bench/db-growth.ts`; the figures are in docs/schema.md and
 * bench/README.md.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { startSandbox } from '../src/sandbox/server.ts';
import { runJobs } from '../src/runner/run-jobs.ts';
import { loadJob } from '../src/jobs/load.ts';
import { registerRawBodyFunction } from '../src/store/raw-body.ts';
import { TRACKING } from '../src/store/history/tracking.ts';

const ANSWERS = 1000;
const TOKEN = 'growth';
const INPUTS: Record<string, { column: string; value: (i: number) => string }> = {
  'similar-companies': { column: 'company_url', value: (i) => `https://www.network.com/company/co-${i}` },
  'post-details': { column: 'post_url', value: (i) => `https://www.network.com/posts/a-${i}_t-activity-${7100000000000000000n + BigInt(i)}-x` },
  'search-jobs': { column: 'keywords', value: (i) => `engineer ${i}` },
};

/** The pages the history's table and its indexes take, in bytes (dbstat). */
const HISTORY_BYTES = "SELECT coalesce(sum(pgsize), 0) AS n FROM dbstat WHERE name = 'changes' OR name LIKE 'changes\\_%' ESCAPE '\\'";

/** The values (tracked columns of the entity rows) the run's answers wrote: what a share of changed values is of. */
function valuesRefreshed(sqlite: BetterSqlite3.Database, runId: number): number {
  const since = (sqlite.prepare('SELECT started_at FROM runs WHERE id = ?').get(runId) as { started_at: string }).started_at;
  let values = 0;
  for (const [table, t] of Object.entries(TRACKING)) {
    if (t.kind !== 'entity') continue;
    const columns = (sqlite.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).filter((c) => c.name !== t.key && !t.ignored.has(c.name)).length;
    values += columns * (sqlite.prepare(`SELECT count(*) AS n FROM ${table} WHERE updated_at >= ?`).get(since) as { n: number }).n;
  }
  return values;
}

/** One night of `operation`'s 1,000 lookups into `db` against the world `ageDays` on; a refresh after the first. */
async function night(dir: string, db: string, ageDays: number, refresh: boolean): Promise<void> {
  const world = await startSandbox({ notFoundRate: 0, tokens: { [TOKEN]: 1e9 }, ageDays });
  try {
    await runJobs({ dbPath: db, jobs: [await loadJob(join(dir, 'job.json'), { cwd: dir })], api: { baseUrl: world.url, token: TOKEN }, refresh });
  } finally {
    await world.stop();
  }
}

async function historyGrowth(operation: string, column: string, value: (i: number) => string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'netingest-history-growth-'));
  try {
    writeFileSync(join(dir, 'in.csv'), [column, ...Array.from({ length: ANSWERS }, (_, i) => value(i))].join('\n') + '\n');
    const input = operation === 'search-jobs' ? { csv: 'in.csv' } : { csv: 'in.csv', column };
    writeFileSync(join(dir, 'job.json'), JSON.stringify({ operation, input, rate: { requestsPerMinute: 1e6, concurrency: 16 } }));
    const db = join(dir, 'netingest.db');
    await night(dir, db, 1, false);
    const before = new BetterSqlite3(db);
    before.exec('VACUUM');
    const [rows0, bytes0] = [(before.prepare('SELECT count(*) AS n FROM changes').get() as { n: number }).n, (before.prepare(HISTORY_BYTES).get() as { n: number }).n];
    before.close();
    await night(dir, db, 2, true);
    const after = new BetterSqlite3(db);
    after.exec('VACUUM');
    const run = (after.prepare('SELECT max(id) AS id FROM runs').get() as { id: number }).id;
    const added = after.prepare('SELECT count(*) AS n, count(DISTINCT task_id) AS tasks, sum(change = \'changed\') AS changed FROM changes WHERE run_id = ?').get(run) as { n: number; tasks: number; changed: number };
    const answers = (after.prepare("SELECT count(*) AS n FROM api_calls WHERE run_id = ? AND status = 200").get(run) as { n: number }).n;
    const bytes = (after.prepare(HISTORY_BYTES).get() as { n: number }).n;
    const values = valuesRefreshed(after, run);
    after.close();
    const per1000 = (n: number) => Math.round((n * 1000) / answers);
    const perRow = (bytes - bytes0) / Math.max(1, added.n);
    // The same night had 5% of the values changed: the members and items as measured, the values scaled.
    const at5 = added.n - added.changed + 0.05 * values;
    console.log(
      `${operation} refresh a day later: ${answers} answers, ${added.tasks} of them (${((100 * added.tasks) / answers).toFixed(1)}%) changed something, ` +
        `${added.changed} of ${values} values (${((100 * added.changed) / values).toFixed(1)}%) -> ` +
        `${per1000(added.n)} changes rows per 1,000 lookups (${per1000(added.changed)} values changed, the rest members and items added or removed), ` +
        `${(per1000(bytes - bytes0) / 1e3).toFixed(1)} kB per 1,000 lookups, ${perRow.toFixed(0)} B a row; at 5% of values changed: ${per1000(at5)} rows, ` +
        `${(per1000(at5 * perRow) / 1e3).toFixed(1)} kB (the first night: ${per1000(rows0)} rows, ${(per1000(bytes0) / 1e3).toFixed(1)} kB)`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// `--history`: the history's rows alone.
const sandbox = process.argv.includes('--history') ? null : await startSandbox({ notFoundRate: 0, tokens: { [TOKEN]: 1e9 } });
try {
  for (const [operation, { column, value }] of sandbox ? Object.entries(INPUTS) : []) {
    const dir = mkdtempSync(join(tmpdir(), 'netingest-growth-'));
    try {
      writeFileSync(join(dir, 'in.csv'), [column, ...Array.from({ length: ANSWERS }, (_, i) => value(i))].join('\n') + '\n');
      const input = operation === 'search-jobs' ? { csv: 'in.csv' } : { csv: 'in.csv', column };
      writeFileSync(join(dir, 'job.json'), JSON.stringify({ operation, input, rate: { requestsPerMinute: 1e6, concurrency: 16 } }));
      const db = join(dir, 'netingest.db');
      await runJobs({ dbPath: db, jobs: [await loadJob(join(dir, 'job.json'), { cwd: dir })], api: { baseUrl: sandbox!.url, token: TOKEN } });
      const sqlite = new BetterSqlite3(db);
      registerRawBodyFunction(sqlite);
      sqlite.exec('VACUUM');
      const bodies = sqlite
        .prepare(`SELECT count(*) AS n, sum(length(CAST(body AS BLOB))) AS gzipped, sum(length(CAST(raw_body(body, body_encoding) AS BLOB))) AS text FROM raw_responses`)
        .get() as { n: number; gzipped: number; text: number };
      sqlite.close();
      const size = statSync(db).size;
      const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
      console.log(
        `${operation}: ${bodies.n} answers -> ${mb(size)} (raw bodies ${mb(bodies.gzipped)} gzipped; as text they were ${mb(bodies.text)}, ` +
          `the file ${mb(size - bodies.gzipped + bodies.text)})`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  await sandbox?.stop();
}

for (const [operation, { column, value }] of Object.entries(INPUTS)) await historyGrowth(operation, column, value);
