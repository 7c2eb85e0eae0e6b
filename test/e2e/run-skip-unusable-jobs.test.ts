/**
 * One unusable job (a broken job file, an input file that cannot be planned) among several: it is reported and
 * recorded, the others run, and the command ends with exit 2 (run and plan, through the CLI).
 */
import { mkdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { exitCodeForRun } from '../../src/cli/exit-codes.ts';
import type { JobSummary, RunSummary } from '../../src/runner/run-summary.ts';
import type { Sandbox } from '../../src/sandbox/server.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';
import {
  FAST_RATE, FAST_RETRY, cliEnv, companyUrls, csv, inProcess, postUrls, query, runCli, taskStatuses, type Workspace, useWorkspaces,
} from '../support/run-helpers.ts';

const TOKEN = 'skip-jobs-token-4e7a';
// A test that starts the CLI (tsx) as a process: on a loaded two-core machine one start can take 10 s.
const CLI_TEST_MS = 90_000;
const sandboxes = useSandboxes();
const workspaces = useWorkspaces();

async function setUp(): Promise<{ sandbox: Sandbox; ws: Workspace }> {
  const sandbox = await sandboxes({ tokens: { [TOKEN]: 10_000 } });
  const ws = await workspaces();
  await mkdir(`${ws.dir}/jobs`);
  return { sandbox, ws };
}

/** Good inputs and job definitions (input paths absolute, so that in-process runs find them too). */
async function goodJobs(ws: Workspace) {
  await ws.write('posts.csv', csv(['post_url'], postUrls(3).map((u) => [u])));
  await ws.write('companies.csv', csv(['company_url'], companyUrls(2).map((u) => [u])));
  const common = { rate: FAST_RATE, retry: FAST_RETRY };
  return {
    posts: { operation: 'post-details', input: { csv: `${ws.dir}/posts.csv`, column: 'post_url' }, ...common },
    companies: { operation: 'similar-companies', input: { csv: `${ws.dir}/companies.csv`, column: 'company_url' }, ...common },
  };
}

const callsTo = (sandbox: Sandbox, op: string) => sandbox.requests.filter((r) => r.path.endsWith(`/${op}`) && r.status === 200).length;

describe('run: an unusable job is skipped, the others run, exit 2', () => {
  it('--all with a broken job file (unknown field, invalid JSON): the other jobs are done; file and field named and recorded', async () => {
    const { sandbox, ws } = await setUp();
    const good = await goodJobs(ws);
    await ws.write('jobs/a-posts.json', JSON.stringify(good.posts));
    await ws.write('jobs/b-companies.json', JSON.stringify(good.companies));
    await ws.write('jobs/m-syntax.json', '{\n  "operation": "post-details",\n  "input": { "csv": "posts.csv" "column": "post_url" }\n}\n');
    await ws.write('jobs/zz.json', JSON.stringify({ ...good.posts, retries: 3 }));

    const cli = await runCli(['run', '--all', '--db', 'data.db', '--json'], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    expect(cli.code, cli.stderr).toBe(2);
    expect(cli.stderr).not.toMatch(/\n\s+at /);
    expect(cli.stderr).toMatch(/ERROR job skipped.* job=zz code=JOB_INVALID error="jobs\/zz\.json: retries: unknown field/);
    expect(cli.stderr).toMatch(/ERROR job skipped.* job=m-syntax code=JOB_INVALID error="jobs\/m-syntax\.json:3:\d+: invalid JSON/);
    expect(cli.stderr).toMatch(/INFO  job finished job=b-companies/);
    expect(callsTo(sandbox, 'post-details')).toBe(3);
    expect(callsTo(sandbox, 'similar-companies')).toBe(2);
    expect(taskStatuses(ws, 'a-posts')).toEqual({ done: 3 });
    expect(taskStatuses(ws, 'b-companies')).toEqual({ done: 2 });

    const summary = JSON.parse(cli.stdout) as RunSummary;
    expect(summary.status).toBe('completed');
    expect(summary.jobs.map((j) => [j.name, j.status, j.error?.code ?? null, j.done])).toEqual([
      ['m-syntax', 'skipped', 'JOB_INVALID', 0],
      ['zz', 'skipped', 'JOB_INVALID', 0],
      ['a-posts', 'ran', null, 3],
      ['b-companies', 'ran', null, 2],
    ]);
    expect(summary.jobs[1]!.error!.message).toMatch(/^jobs\/zz\.json: retries: unknown field/);
    const [runRow] = query<{ status: string; error: string; jobs: string; exit_code: number }>(ws, 'SELECT status, error, jobs, exit_code FROM runs');
    expect(runRow!.status).toBe('completed');
    // The row says how the process exited, as docs/schema.md promises.
    expect(runRow!.exit_code).toBe(cli.code);
    expect(JSON.parse(runRow!.jobs)).toEqual(['a-posts', 'b-companies']);
    expect(runRow!.error).toMatch(/^skipped job m-syntax: JOB_INVALID: jobs\/m-syntax\.json:3:\d+: invalid JSON: .*\nskipped job zz: JOB_INVALID: jobs\/zz\.json: retries: unknown field/);
  }, CLI_TEST_MS);

  it('named job files, the second one broken: the first runs; the text summary names the skipped file and field', async () => {
    const { sandbox, ws } = await setUp();
    const good = await goodJobs(ws);
    const posts = await ws.job('posts', good.posts);
    const broken = await ws.job('broken', { ...good.companies, pages: 'two' });
    const tokenFile = await ws.write('token', TOKEN + '\n', 0o600);
    const cli = await inProcess(['run', posts, broken, '--db', ws.db, '--api-url', sandbox.url, '--token-file', tokenFile]);
    expect(cli.code, cli.stderr).toBe(2);
    expect(cli.stdout).toMatch(/^Run 1: completed; 1 job skipped/);
    expect(cli.stdout).toContain(`  broken: skipped: ${broken}: pages: must be a number (got "two") [JOB_INVALID]`);
    expect(cli.stdout).toMatch(/ {2}posts \(post-details\): 3 tasks, 0 still fresh, 3 done/);
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 3 });
    expect(callsTo(sandbox, 'post-details')).toBe(3);
  });

  it('later jobs whose input cannot be planned (missing file, absent column, misspelt search column): the jobs around them run', async () => {
    const { sandbox, ws } = await setUp();
    const good = await goodJobs(ws);
    await ws.write('queries.csv', 'keyword,location\ndata engineer,germany\n');
    const files = [
      await ws.job('a-posts', good.posts),
      await ws.job('b-missing', { ...good.posts, input: { csv: `${ws.dir}/nowhere.csv`, column: 'post_url' } }),
      await ws.job('c-column', { ...good.posts, input: { csv: `${ws.dir}/posts.csv`, column: 'url' } }),
      await ws.job('d-search', { operation: 'search-jobs', input: { csv: `${ws.dir}/queries.csv` }, rate: FAST_RATE, retry: FAST_RETRY }),
      await ws.job('e-companies', good.companies),
    ];
    const tokenFile = await ws.write('token', TOKEN + '\n', 0o600);
    const cli = await inProcess(['run', ...files, '--db', ws.db, '--api-url', sandbox.url, '--token-file', tokenFile, '--json']);
    expect(cli.code, cli.stderr).toBe(2);
    const summary = JSON.parse(cli.stdout) as RunSummary;
    const byName = Object.fromEntries(summary.jobs.map((j) => [j.name, j])) as Record<string, JobSummary>;
    expect(summary.jobs.map((j) => [j.name, j.status])).toEqual([
      ['a-posts', 'ran'], ['b-missing', 'skipped'], ['c-column', 'skipped'], ['d-search', 'skipped'], ['e-companies', 'ran'],
    ]);
    expect(byName['b-missing']!.error).toEqual({ code: 'INPUT_INVALID', message: expect.stringMatching(/nowhere\.csv: .*file not found/) });
    expect(byName['c-column']!.error!.message).toMatch(/posts\.csv: .*"url".*line 1.*"post_url"/);
    expect(byName['d-search']!.error!.message).toMatch(/queries\.csv: line 1: column "keyword" is not a search parameter; did you mean "keywords"\?/);
    for (const name of ['b-missing', 'c-column', 'd-search']) {
      expect(cli.stderr).toMatch(new RegExp(`ERROR job skipped.* job=${name} code=INPUT_INVALID error=`));
    }
    expect(taskStatuses(ws, 'a-posts')).toEqual({ done: 3 });
    expect(taskStatuses(ws, 'e-companies')).toEqual({ done: 2 });
    expect(callsTo(sandbox, 'post-details')).toBe(3);
    expect(callsTo(sandbox, 'similar-companies')).toBe(2);
    expect(callsTo(sandbox, 'search-jobs')).toBe(0);
    const [runRow] = query<{ status: string; error: string }>(ws, 'SELECT status, error FROM runs');
    expect(runRow!.status).toBe('completed');
    expect(runRow!.error.split('\n').map((l) => l.replace(/: INPUT_INVALID: .*/, ''))).toEqual([
      'skipped job b-missing', 'skipped job c-column', 'skipped job d-search',
    ]);
  });

  it('every job unusable: nothing runs, exit 2 with every problem, the run recorded as failed', async () => {
    const { sandbox, ws } = await setUp();
    const good = await goodJobs(ws);
    const files = [
      await ws.job('a-missing', { ...good.posts, input: { csv: `${ws.dir}/nowhere.csv`, column: 'post_url' } }),
      await ws.job('b-column', { ...good.companies, input: { csv: `${ws.dir}/companies.csv`, column: 'url' } }),
    ];
    const tokenFile = await ws.write('token', TOKEN + '\n', 0o600);
    const cli = await inProcess(['run', ...files, '--db', ws.db, '--api-url', sandbox.url, '--token-file', tokenFile]);
    expect(cli.code, cli.stderr).toBe(2);
    expect(cli.stdout).toBe('');
    expect(cli.stderr).toMatch(/^netingest: .*nowhere\.csv: .*file not found\n.*companies\.csv: .*"url".*\[INPUT_INVALID\]$/m);
    expect(sandbox.requests).toHaveLength(0);
    const [runRow] = query<{ status: string; error: string; exit_code: number }>(ws, 'SELECT status, error, exit_code FROM runs');
    expect(runRow!.status).toBe('failed');
    expect(runRow!.exit_code).toBe(2);
    expect(runRow!.error).toMatch(/^skipped job a-missing: INPUT_INVALID: .*\nskipped job b-column: INPUT_INVALID: /);
  });
});

describe('plan: every job it can, then the unusable ones, exit 2', () => {
  it('plan --all with a broken job file and a job whose input column is absent; two jobs of one name refuse the whole plan', async () => {
    const { ws } = await setUp();
    const good = await goodJobs(ws);
    await ws.write('jobs/a-posts.json', JSON.stringify(good.posts));
    await ws.write('jobs/b-column.json', JSON.stringify({ ...good.companies, input: { csv: 'companies.csv', column: 'url' } }));
    await ws.write('jobs/c-companies.json', JSON.stringify(good.companies));
    await ws.write('jobs/zz.json', JSON.stringify({ ...good.posts, retries: 3 }));

    const plan = await runCli(['plan', '--all', '--db', 'data.db'], { cwd: ws.dir });
    expect(plan.code, plan.stderr).toBe(2);
    expect(plan.stdout).toMatch(/^a-posts \(post-details\)\n {2}input: 3 tasks,/m);
    expect(plan.stdout).toMatch(/^c-companies \(similar-companies\)\n {2}input: 2 tasks,/m);
    expect(plan.stdout).not.toContain('b-column');
    expect(plan.stderr).toMatch(/^netingest: jobs\/zz\.json: retries: unknown field.*\[JOB_INVALID\]$/m);
    expect(plan.stderr).toMatch(/^netingest: companies\.csv: .*"url".*"company_url".*\[INPUT_INVALID\]$/m);
    expect(plan.stderr).not.toMatch(/\n\s+at /);

    // Two jobs named alike would share ledger rows: the whole plan is refused, as a run would be.
    await ws.write('jobs/d-again.json', JSON.stringify({ ...good.posts, name: 'a-posts' }));
    // The first plan above is a real process (its stderr holds no stack); this one the CLI's code in this process.
    const clash = await inProcess(['plan', '--all', '--db', 'data.db'], {}, { cwd: ws.dir });
    expect(clash.code, clash.stderr).toBe(2);
    expect(clash.stdout).toBe('');
    expect(clash.stderr).toBe('netingest: jobs/d-again.json: name: name "a-posts" is already used by jobs/a-posts.json; job names must be unique [JOB_INVALID]\n');
  }, CLI_TEST_MS);
});

describe('the exit code of a finished run', () => {
  it('run-level outcomes first (130, 3, 1), then skipped jobs (2), then failed items (5)', () => {
    const job = (status: JobSummary['status']) => ({ status }) as JobSummary;
    const code = (status: RunSummary['status'], ...jobs: JobSummary[]) => exitCodeForRun({ status, jobs });
    expect(code('completed', job('ran'))).toBe(0);
    expect(code('completed_with_failures', job('ran'))).toBe(5);
    expect(code('completed', job('ran'), job('skipped'))).toBe(2);
    expect(code('completed_with_failures', job('skipped'), job('ran'))).toBe(2);
    expect(code('stopped_credits', job('skipped'), job('ran'))).toBe(3);
    expect(code('stopped_throttled', job('skipped'), job('ran'))).toBe(3);
    expect(code('interrupted', job('skipped'), job('ran'))).toBe(130);
    expect(code('failed', job('skipped'), job('ran'))).toBe(1);
  });
});
