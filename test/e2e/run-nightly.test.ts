/**
 * What a nightly cron user sees over several runs on one database: the input edited between nights, and jobs
 * with credit caps of their own sharing a run.
 */
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { planReport } from '../../src/runner/plan-report.ts';
import { FAST_RATE, FAST_RETRY, cliEnv, companyUrls, csv, inProcess, postUrls, query, run, runCli, taskStatuses, useWorkspaces, operationRequests } from '../support/run-helpers.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

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

describe('a job that reaches its own credits.maxPerRun', () => {
  it('defers its own rest and lets the next job of the run go on', async () => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    const urls = postUrls(10);
    await ws.write('capped.csv', csv(['post_url'], urls.slice(0, 8).map((u) => [u])));
    await ws.write('free.csv', csv(['post_url'], urls.slice(8).map((u) => [u])));
    const capped = await ws.job('capped', {
      operation: 'post-details', input: { csv: 'capped.csv', column: 'post_url' }, rate: FAST_RATE, credits: { maxPerRun: 6 },
    });
    const free = await ws.job('free', { operation: 'post-details', input: { csv: 'free.csv', column: 'post_url' }, rate: FAST_RATE });

    const summary = await run(ws, sandbox, TOKEN, await ws.load(capped, free));
    expect(summary.status).toBe('stopped_credits');
    expect(summary.stop).toMatchObject({ reason: 'credits', limit: 'max-per-run' });
    expect(summary.jobs.map((j) => [j.name, j.status, j.done, j.deferred])).toEqual([
      ['capped', 'ran', 6, 2],
      ['free', 'ran', 2, 0],
    ]);
    expect(operationRequests(sandbox).filter((r) => r.status === 200)).toHaveLength(8);
    expect(query(ws, 'SELECT status, tasks_deferred, error FROM runs')).toEqual([
      { status: 'stopped_credits', tasks_deferred: 2, error: expect.stringMatching(/^credits\.maxPerRun of job capped: the run had spent 6 of its cap of 6/) },
    ]);

    // The next night resumes the deferred ones, paying for nothing twice.
    sandbox.clearLog();
    const next = await run(ws, sandbox, TOKEN, await ws.load(capped, free));
    expect(next.status).toBe('completed');
    expect(operationRequests(sandbox)).toHaveLength(2);
    expect(taskStatuses(ws, 'capped')).toEqual({ done: 8 });
  });

  it('makes no call for a later job whose cap the run has already spent (--max-credits)', async () => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    const urls = postUrls(10);
    await ws.write('a.csv', csv(['post_url'], urls.slice(0, 8).map((u) => [u])));
    await ws.write('b.csv', csv(['post_url'], urls.slice(8).map((u) => [u])));
    const a = await ws.job('a', { operation: 'post-details', input: { csv: 'a.csv', column: 'post_url' }, rate: FAST_RATE });
    const b = await ws.job('b', { operation: 'post-details', input: { csv: 'b.csv', column: 'post_url' }, rate: FAST_RATE });

    const summary = await run(ws, sandbox, TOKEN, await ws.load(a, b), { overrides: { maxCredits: 6 } });
    expect(summary.status).toBe('stopped_credits');
    expect(summary.jobs.map((j) => [j.name, j.status, j.done, j.deferred])).toEqual([
      ['a', 'ran', 6, 2],
      ['b', 'ran', 0, 2],
    ]);
    expect(operationRequests(sandbox)).toHaveLength(6);
    expect(summary.creditsSpent).toBe(6);
  });
});

describe('refreshAfterDays under a nightly schedule', () => {
  it('a weekly refresh comes on the 7th night although the answers arrived after that run started', async () => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    await ws.write('posts.csv', csv(['post_url'], postUrls(3).map((u) => [u])));
    const jobs = await ws.load(await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, refreshAfterDays: 7 }));
    await run(ws, sandbox, TOKEN, jobs);
    const age = (modifier: string) => {
      const db = new BetterSqlite3(ws.db);
      db.prepare(`UPDATE tasks SET completed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ${modifier})`).run();
      db.close();
    };
    // Six nights on: fresh.
    age("'-6 days', '+20 minutes'");
    expect(await planReport(jobs[0]!, ws.db)).toMatchObject({ fresh: 3, calls: 0 });
    // The 7th night: received 20 minutes after the start of the run a week ago, they are due.
    age("'-7 days', '+20 minutes'");
    expect(await planReport(jobs[0]!, ws.db)).toMatchObject({ fresh: 0, calls: 3 });
    sandbox.clearLog();
    await run(ws, sandbox, TOKEN, jobs);
    expect(operationRequests(sandbox)).toHaveLength(3);
  });
});

describe('the same lookup asked by another job', () => {
  it('a job file renamed (a new job name) takes the old answers instead of paying again, while they are fresh', async () => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    await ws.write('posts.csv', csv(['post_url'], postUrls(3).map((u) => [u])));
    const definition = { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, refreshAfterDays: 7 };
    await run(ws, sandbox, TOKEN, await ws.load(await ws.job('posts', definition)));
    expect(operationRequests(sandbox)).toHaveLength(3);

    sandbox.clearLog();
    const renamed = await ws.load(await ws.job('posts-v2', definition));
    expect(await planReport(renamed[0]!, ws.db)).toMatchObject({ tasks: 3, fresh: 3, calls: 0 });
    const summary = await run(ws, sandbox, TOKEN, renamed);
    expect(sandbox.requests).toHaveLength(0);
    expect(summary.jobs[0]).toMatchObject({ name: 'posts-v2', fresh: 3, done: 3 });
    expect(query(ws, "SELECT count(*) AS n FROM tasks t JOIN tasks o ON o.input_key = t.input_key AND o.job = 'posts' WHERE t.job = 'posts-v2' AND t.completed_at = o.completed_at")).toEqual([{ n: 3 }]);

    // Eight days later the answers are stale for this job: it pays for them, once.
    const db = new BetterSqlite3(ws.db);
    db.prepare(`UPDATE tasks SET completed_at = strftime('%Y-%m-%dT%H:%M:%fZ', completed_at, '-8 days')`).run();
    db.close();
    expect(await planReport(renamed[0]!, ws.db)).toMatchObject({ fresh: 0, calls: 3 });
    await run(ws, sandbox, TOKEN, renamed);
    expect(operationRequests(sandbox)).toHaveLength(3);
  });

  it('--refresh pays once for a lookup two jobs of the run ask', async () => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    const [p1, p2, p3] = postUrls(3);
    await ws.write('a.csv', csv(['post_url'], [[p1!], [p2!]]));
    await ws.write('b.csv', csv(['post_url'], [[p2!], [p3!]]));
    const files = [
      await ws.job('a', { operation: 'post-details', input: { csv: 'a.csv', column: 'post_url' }, rate: FAST_RATE }),
      await ws.job('b', { operation: 'post-details', input: { csv: 'b.csv', column: 'post_url' }, rate: FAST_RATE }),
    ];
    await run(ws, sandbox, TOKEN, await ws.load(...files));
    expect(operationRequests(sandbox)).toHaveLength(3);
    sandbox.clearLog();
    await run(ws, sandbox, TOKEN, await ws.load(...files), { refresh: true });
    expect(operationRequests(sandbox)).toHaveLength(3);
    expect(new Set(operationRequests(sandbox).map((r) => r.query['url'])).size).toBe(3);
    expect(taskStatuses(ws, 'b')).toEqual({ done: 2 });
  });
});

describe('quiet under cron (no terminal)', () => {
  /** Output lines; the newline ending the output is not a line. */
  const lines = (text: string) => text.split('\n').filter((l, i, all) => l !== '' || i < all.length - 1);

  it('a night with nothing to do writes one line, with the exit code; invalid rows reported before are counted, not listed', async () => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    const good = companyUrls(4);
    const bad = Array.from({ length: 23 }, (_, i) => [`not a url ${i}`, 'jo']);
    await ws.write('leads.csv', csv(['company_url', 'owner'], [...good.slice(0, 3).map((u) => [u, 'li']), ...bad]));
    const file = await ws.job('leads', {
      operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, rate: FAST_RATE, retry: FAST_RETRY,
    });
    // The quiet night is a spawned CLI, all a real process writes; the nights around it the CLI's code in this
    // process, its output as unlike a terminal.
    const night = () => runCli(['run', file, '--db', ws.db], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    const nightHere = () => inProcess(['run', file, '--db', ws.db], cliEnv(sandbox, TOKEN), { cwd: ws.dir });

    // Night 1: calls made, every invalid row new: listed.
    const first = await nightHere();
    expect(first.code, first.stderr).toBe(0);
    expect(lines(first.stderr).filter((l) => l.includes('invalid input row'))).toHaveLength(20);
    expect(lines(first.stderr).at(-1)).toMatch(/ run finished .* exit_code=0$/);

    // Night 2: the same input, everything fresh: one line in all, the last log line, with the exit code.
    const second = await night();
    expect(second.code).toBe(0);
    expect(second.stdout).toBe('');
    expect(lines(second.stderr)).toEqual([expect.stringMatching(/ INFO {2}run finished run=2 status=completed calls=0 .*invalid_rows=23 exit_code=0$/)]);

    // Night 3: a new lead and a new bad row: the new one is listed, the 23 of before counted.
    await ws.write('leads.csv', csv(['company_url', 'owner'], [...good.map((u) => [u, 'li']), ...bad, ['still not a url', 'li']]));
    const third = await nightHere();
    expect(third.code, third.stderr).toBe(0);
    const listed = lines(third.stderr).filter((l) => l.includes('invalid input row'));
    expect(listed).toEqual([expect.stringContaining('line=29 field=company_url')]);
    expect(third.stderr).toMatch(/job planned job=leads tasks=4 invalid=24 invalid_known=23 /);
    expect(lines(third.stderr).at(-1)).toMatch(/ run finished run=3 .*calls=1 .*exit_code=0$/);
    expect(third.stdout).toMatch(/^ {4}invalid: leads\.csv:29 \(company_url\): /m);
    expect(third.stdout).toContain('    23 invalid rows already reported by an earlier run, not listed again');
    expect(third.stdout.match(/^ {4}invalid: /gm)).toHaveLength(1);
  }, 60_000);
});
