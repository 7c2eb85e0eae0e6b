/**
 * How much the database grows per 1,000 stored answers, by operation: the file after 1,000 sandbox answers,
 * and how much of it the raw bodies take gzipped (as stored) and as text (as an earlier build stored them).
 * A refresh of the same lookups grows the file by about the gzipped bodies alone (its rows are updated in
 * place). Run: `npx tsx bench/db-growth.ts`; the figures are in README.md and bench/README.md.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { startSandbox } from '../src/sandbox/server.ts';
import { runJobs } from '../src/runner/run-jobs.ts';
import { loadJob } from '../src/jobs/load.ts';
import { registerRawBodyFunction } from '../src/store/raw-body.ts';

const ANSWERS = 1000;
const TOKEN = 'growth';
const INPUTS: Record<string, { column: string; value: (i: number) => string }> = {
  'similar-companies': { column: 'company_url', value: (i) => `https://www.network.com/company/co-${i}` },
  'post-details': { column: 'post_url', value: (i) => `https://www.network.com/posts/a-${i}_t-activity-${7100000000000000000n + BigInt(i)}-x` },
  'search-jobs': { column: 'keywords', value: (i) => `engineer ${i}` },
};

const sandbox = await startSandbox({ notFoundRate: 0, tokens: { [TOKEN]: 1e9 } });
try {
  for (const [operation, { column, value }] of Object.entries(INPUTS)) {
    const dir = mkdtempSync(join(tmpdir(), 'netingest-growth-'));
    try {
      writeFileSync(join(dir, 'in.csv'), [column, ...Array.from({ length: ANSWERS }, (_, i) => value(i))].join('\n') + '\n');
      const input = operation === 'search-jobs' ? { csv: 'in.csv' } : { csv: 'in.csv', column };
      writeFileSync(join(dir, 'job.json'), JSON.stringify({ operation, input, rate: { requestsPerMinute: 1e6, concurrency: 16 } }));
      const db = join(dir, 'netingest.db');
      await runJobs({ dbPath: db, jobs: [await loadJob(join(dir, 'job.json'), { cwd: dir })], api: { baseUrl: sandbox.url, token: TOKEN } });
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
  await sandbox.stop();
}
