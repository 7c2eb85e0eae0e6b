/**
 * A dataset with a history, for the tests of what reads it (ready queries, enrich --changes-since): two nights
 * against the sandbox with the world moved between them (ageDays 1, then `laterDay`). The lookalikes job's
 * leads gain, before the second night, the companies of some jobs the first night found: targets that hire.
 */
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import type { Job } from '../../src/jobs/schema.ts';
import type { TestDb, TestEngine } from './engines.ts';
import { FAST_RATE, FAST_RETRY, csv, postUrls, run, type Workspace } from '../support/run-helpers.ts';

const TOKEN = 'history-world-token-2b9d';
export const HISTORY_REFS = ['acme-robotics', 'globex-logistics', 'initech', 'umbrella-labs'].map((r) => `https://www.network.com/company/${r}`);
export const HISTORY_POSTS = postUrls(10);
const QUERIES = [['robotics engineer', 'germany'], ['data analyst', 'france'], ['sales manager', 'spain']];

export interface HistoryWorld {
  db: TestDb;
  jobs: { lookalikes: Job; posts: Job; searches: Job };
  /** The two nights' run ids. */
  runs: [number, number];
  /** The leads of the lookalikes job as of the second night. */
  leads: string[];
}

/** Two nights into a new dataset of `engine` in `ws`; the sandboxes are stopped before it returns. */
export async function twoNights(engine: TestEngine, ws: Workspace, laterDay = 2): Promise<HistoryWorld> {
  const db = await engine.open(ws.dir);
  await ws.write('posts.csv', csv(['post_url'], HISTORY_POSTS.map((u) => [u])));
  await ws.write('queries.csv', csv(['keywords', 'location'], QUERIES));
  const common = { rate: FAST_RATE, retry: FAST_RETRY };
  const writeLeads = (leads: string[]) => ws.write('leads.csv', csv(['company_url'], leads.map((u) => [u])));
  await writeLeads(HISTORY_REFS);
  const files = [
    await ws.job('lookalikes', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, request: { num: 10 }, pages: 2, ...common }),
    await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, ...common }),
    await ws.job('searches', { operation: 'search-jobs', input: { csv: 'queries.csv' }, pages: 2, ...common }),
  ];
  const night = async (ageDays: number, refresh: boolean) => {
    const sandbox: Sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 100_000 }, notFoundRate: 0, ageDays });
    try {
      const summary = await run(ws, sandbox, TOKEN, await ws.load(...files), { dbPath: db.locator, refresh });
      if (summary.status !== 'completed') throw new Error(`night at day ${ageDays}: ${summary.status}`);
      return summary.runId;
    } finally {
      await sandbox.stop();
    }
  };
  const first = await night(1, false);
  const hiring = await db.rows<{ company_link: string }>('SELECT DISTINCT company_link FROM jobs ORDER BY company_link LIMIT 3');
  const leads = [...HISTORY_REFS, ...hiring.map((r) => r.company_link)];
  await writeLeads(leads);
  const second = await night(laterDay, true);
  const [lookalikes, posts, searches] = await ws.load(...files);
  return { db, jobs: { lookalikes: lookalikes!, posts: posts!, searches: searches! }, runs: [first, second], leads };
}
