/**
 * A test worker spending from a shared account: `lanes` callers reserve the estimated cost, "call" (the test's
 * `fake_account` row is the service: it charges the real cost, at most the estimate, and answers with the
 * counters), and settle with what the call cost, until the budget says stop. Prints how its lanes stopped.
 */
import pg from 'pg';
import { SharedCreditBudget } from '../../../src/store/pg/coordination/shared-credit-budget.ts';

interface Scenario { apiUrl: string; runKey: string; reserve: number; maxPerRun: number | null; exactCost: boolean }
const settings = JSON.parse(process.argv[2]!) as { url: string; workerId: string; lanes: number; estimate: number; scenarios: Scenario[] };
const pool = new pg.Pool({ connectionString: settings.url, max: settings.lanes + 1 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

process.stdout.write('ready\n');
while ((await pool.query('SELECT 1 FROM go')).rowCount === 0) await sleep(20);

const stops: string[] = [];
for (const scenario of settings.scenarios) {
  const budget = new SharedCreditBudget(pool, { apiUrl: scenario.apiUrl, runKey: scenario.runKey, workerId: settings.workerId, pollMs: 5 });
  const limits = { reserve: scenario.reserve, maxPerRun: scenario.maxPerRun };
  await Promise.all(
    Array.from({ length: settings.lanes }, async (_, lane) => {
      for (let n = 0; ; n++) {
        const got = await budget.acquire(() => ({ cost: settings.estimate, probe: false }), limits);
        if ('stop' in got) return void stops.push(got.stop);
        // The real cost: the estimate, or 1 to the estimate varying by lane and call (settling frees the rest).
        const cost = scenario.exactCost ? settings.estimate : 1 + ((lane + n) % settings.estimate);
        await sleep(n % 3);
        const { rows } = await pool.query(
          `UPDATE fake_account SET credits_used = credits_used + $2 WHERE api_url = $1
           RETURNING credits_used::float8, total_credits::float8, (total_credits - credits_used)::float8 AS credits_remaining`,
          [scenario.apiUrl, cost],
        );
        await budget.settle(got, { cost, counters: rows[0] });
      }
    }),
  );
}
await pool.end();
process.stdout.write(`${JSON.stringify({ stops })}\n`);
