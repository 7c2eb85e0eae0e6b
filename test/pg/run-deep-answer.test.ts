/**
 * A body nested thousands of levels deep (a garbled or hostile service's: `[[[[...]]]]` in a record's member). The text
 * rule's walk overflowed the stack: the run ended `failed` with "Maximum call stack size exceeded" (INTERNAL) after
 * paying for the calls, recorded none of them (`calls: 0`), and did the same every night. Now such a body is
 * unusable (SCHEMA), kept in raw_responses, and the run goes on.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { company, similarResponse } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { forEachEngine } from './engines.ts';

const COMPANIES = 2;
let ws: OpsWorkspace;
const startFake = useFakeServices();

beforeEach(async () => {
  ws = await opsWorkspace({ companies: COMPANIES, retries: 1 });
});
afterEach(() => ws.cleanup());

forEachEngine('an answer nested 20,000 levels deep', (engine) => {
  it('fails its task as SCHEMA, its call and body recorded, and the run goes on', async () => {
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    let calls = 0;
    let deepSent = 0;
    const baseUrl = await startFake((req, res) => {
      if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
      calls += 1;
      const body = JSON.stringify(similarResponse([company(calls, { url: `https://www.network.com/company/listed-${calls}` })], 1, 10));
      // Every other answer nests a record's member deep; the others are as the live service sends them.
      const deepOne = calls % 2 === 1;
      deepSent += deepOne ? 1 : 0;
      res.writeHead(200, { 'content-type': 'application/json' }).end(deepOne ? body.replace('"cover":null', `"cover":${deep}`) : body);
    });
    const db = await engine.open(ws.dir);
    const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.lookalikesJob, { cwd: ws.dir })], api: { baseUrl, token: 'deep-answer-token-0001' } });
    expect(summary.error).toBeNull();
    expect(summary.calls).toBe(calls);
    const failed = await db.rows<{ last_error: string }>("SELECT last_error FROM tasks WHERE status = 'failed'");
    expect(failed).toHaveLength(deepSent);
    expect(failed[0]!.last_error).toMatch(/data\.content\[\]\.cover\[\]\[\].*: nested deeper than 100 levels/);
    expect(summary.jobs[0]).toMatchObject({ failed: deepSent, failedByCode: { SCHEMA: deepSent }, done: calls - deepSent });
    expect(await db.rows("SELECT count(*) AS n FROM raw_responses WHERE error_code = 'SCHEMA'")).toEqual([{ n: deepSent }]);
    expect(await db.rows('SELECT count(*) AS n FROM api_calls')).toEqual([{ n: calls }]);
  }, 60_000);
});
