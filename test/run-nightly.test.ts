/**
 * What a nightly cron user sees over several runs on one database: the input edited between nights, and jobs
 * with credit caps of their own sharing a run.
 */
import { describe, expect, it } from 'vitest';
import { FAST_RATE, FAST_RETRY, companyUrls, csv, query, run, useWorkspaces } from './run-helpers.ts';
import { useSandboxes } from './sandbox-helpers.ts';

const TOKEN = 'nightly-token';
const newWorkspace = useWorkspaces();
const newSandbox = useSandboxes();

describe('the input edited between nights', () => {
  it('keeps in invalid_inputs only the rows the input has now', async () => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    const [a, b] = companyUrls(2);
    await ws.write('leads.csv', csv(['company_url', 'owner'], [[a!, 'jo'], ['https://www.network.com/in/jane-doe', 'jo'], ['', 'li'], [b!, 'li']]));
    const file = await ws.job('leads', {
      operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, rate: FAST_RATE, retry: FAST_RETRY,
    });
    await run(ws, sandbox, TOKEN, await ws.load(file));
    expect(query(ws, 'SELECT line, reason FROM invalid_inputs ORDER BY line')).toEqual([
      { line: 3, reason: expect.stringContaining('not a company page') },
      { line: 4, reason: 'empty' },
    ]);

    // Night 2: the empty cell was filled in and the profile URL removed; a new bad row came in at the end.
    await ws.write('leads.csv', csv(['company_url', 'owner'], [[a!, 'jo'], [b!, 'li'], ['https://www.network.com/company/fixed', 'li'], ['not a url at all', 'jo']]));
    const second = await run(ws, sandbox, TOKEN, await ws.load(file));
    expect(second.jobs[0]!.invalidRows).toBe(1);
    expect(query(ws, 'SELECT line, value, run_id FROM invalid_inputs')).toEqual([
      { line: 5, value: 'not a url at all', run_id: second.runId },
    ]);
    expect(query(ws, "SELECT invalid_rows FROM v_job_progress WHERE job = 'leads'")).toEqual([{ invalid_rows: 1 }]);

    // Night 3: the column is gone, so the input was not read: what night 2 found stays.
    await ws.write('leads.csv', csv(['url'], [[a!]]));
    await expect(run(ws, sandbox, TOKEN, await ws.load(file))).rejects.toThrow(/company_url/);
    expect(query(ws, 'SELECT line FROM invalid_inputs')).toEqual([{ line: 5 }]);
  });
});
