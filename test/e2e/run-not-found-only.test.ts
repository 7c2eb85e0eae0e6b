/**
 * A post-details or search-jobs job whose every answer in a run is a 404 "not found" is warned about (a WARN
 * log line, the text summary, the --json summary) because an API URL with a wrong path prefix gets the same
 * answer from the web server in front of the API; the outcome and exit code stay as they are. Against the real
 * sandbox, whose 404 for an unknown path is `{"message":"Not Found"}`, and SQLite files: the first case through the
 * built CLI as a child process, the others through the same command code in this process (no Node start each).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { RUN_DEFAULTS, type RunSummary } from '../../src/runner/run-jobs.ts';
import { NotFoundOnlyWatch } from '../../src/runner/not-found-only.ts';
import { DriftTally } from '../../src/operations/drift.ts';
import { FAST_RATE, FAST_RETRY, cliEnv, companyUrls, csv, inProcess, postUrls, runCli, taskStatuses, useWorkspaces, type Workspace } from '../support/run-helpers.ts';

const TOKEN = 'not-found-only-token-5e1d';
const HINT = 'check the API URL (NETINGEST_API_URL or --api-url)';
const MIN = RUN_DEFAULTS.notFoundOnlyMinAnswers;

let sandbox: Sandbox;
const workspace = useWorkspaces();

beforeAll(async () => {
  sandbox = await startSandbox({ tokens: { [TOKEN]: 100_000 }, notFoundRate: 0 });
});
afterAll(async () => {
  await sandbox?.stop();
});

/** The CLI's environment with the sandbox's URL and `suffix` after it: `/api` is a path the sandbox does not serve. */
function envWith(suffix: string): Record<string, string> {
  return { ...cliEnv(sandbox, TOKEN), NETINGEST_API_URL: `${sandbox.url}${suffix}` };
}

/**
 * `run <job>` twice on fresh databases, text then --json (a second run on one database would find them fresh).
 * `spawned`: the text run (log line and summary) from the built CLI; --json prints the same summary object.
 */
async function runTextAndJson(ws: Workspace, job: string, suffix: string, how: 'spawned' | 'in-process' = 'in-process') {
  const env = envWith(suffix);
  const text = await (how === 'spawned' ? runCli : inProcessAt)(['run', job, '--db', join(ws.dir, 'text.db')], { cwd: ws.dir, env });
  const json = await inProcessAt(['run', job, '--db', join(ws.dir, 'json.db'), '--json'], { cwd: ws.dir, env });
  for (const r of [text, json]) expect(r.stdout + r.stderr).not.toContain(TOKEN);
  return { text, json, summary: JSON.parse(json.stdout) as RunSummary };
}

function inProcessAt(args: string[], options: { cwd: string; env: Record<string, string> }) {
  return inProcess(args, options.env, { cwd: options.cwd });
}

async function postsJob(ws: Workspace, urls: string[]): Promise<string> {
  await ws.write('posts.csv', csv(['post_url'], urls.map((u) => [u])));
  return ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
}

function warnLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => / WARN /.test(l) && l.includes(HINT));
}

describe('a job whose every answer is a 404 not found', () => {
  it('post-details, 12 posts behind a wrong path prefix: exit 0, all not found, warned in the log and both summaries', async () => {
    const ws = await workspace();
    const job = await postsJob(ws, postUrls(12));
    const { text, json, summary } = await runTextAndJson(ws, job, '/api', 'spawned');

    expect(text.code, text.stderr).toBe(EXIT.ok);
    expect(json.code, json.stderr).toBe(EXIT.ok);
    expect(taskStatuses({ ...ws, db: join(ws.dir, 'text.db') }, 'posts')).toEqual({ not_found: 12 });

    const lines = warnLines(text.stderr);
    expect(lines, text.stderr).toHaveLength(1);
    const line = lines[0]!;
    expect(line).toContain('job posts (post-details): all 12 answers were 404 not found');
    expect(line).toContain(`if these inputs do exist, ${HINT}: a web server's or gateway's 404 for a wrong path looks the same for this operation`);
    expect(line).toMatch(/ job=posts answers=12 status=404 body_message="Not Found"$/);

    expect(text.stdout).toMatch(/\n {2}posts \(post-details\): 12 tasks, .*0 done, 12 not found.*\n {4}warning: job posts .*all 12 answers were 404 not found \(message "Not Found"\); if these inputs do exist, check the API URL .*\[NOT_FOUND_ONLY\]\n/);

    expect(summary.status).toBe('completed');
    expect(summary.jobs[0]).toMatchObject({ name: 'posts', done: 0, notFound: 12 });
    expect(summary.jobs[0]!.warnings).toEqual([
      expect.objectContaining({ code: 'NOT_FOUND_ONLY', answers: 12, status: 404, bodyMessage: 'Not Found', message: expect.stringContaining(HINT) }),
    ]);
  });

  it('search-jobs, 12 queries behind a wrong path prefix: counts the answers, not the later pages settled without a call', async () => {
    const ws = await workspace();
    await ws.write('queries.csv', csv(['keywords'], Array.from({ length: 12 }, (_, i) => [`welder ${i}`])));
    const job = await ws.job('searches', { operation: 'search-jobs', input: { csv: 'queries.csv' }, pages: 2, rate: FAST_RATE, retry: FAST_RETRY });
    const { text, json, summary } = await runTextAndJson(ws, job, '/api');

    expect(text.code, text.stderr).toBe(EXIT.ok);
    expect(json.code, json.stderr).toBe(EXIT.ok);
    expect(taskStatuses({ ...ws, db: join(ws.dir, 'text.db') }, 'searches')).toEqual({ not_found: 24 });
    const lines = warnLines(text.stderr);
    expect(lines, text.stderr).toHaveLength(1);
    const line = lines[0]!;
    expect(line).toContain('job searches (search-jobs): all 12 answers were 404 not found');
    expect(line).toMatch(/ job=searches answers=12 status=404 body_message="Not Found"$/);
    expect(text.stdout).toMatch(/\n {4}warning: job searches \(search-jobs\): all 12 answers .*\[NOT_FOUND_ONLY\]\n/);
    expect(summary.jobs[0]).toMatchObject({ notFound: 24, warnings: [expect.objectContaining({ code: 'NOT_FOUND_ONLY', answers: 12 })] });
  });
});

describe('no warning', () => {
  it('post-details at the right URL where some posts are not found and the others have data', async () => {
    const ws = await workspace();
    const notFound = Array.from({ length: 12 }, (_, i) => `https://www.network.com/posts/notfound-gone-${i}_x-activity-${7200000000000000000n + BigInt(i)}-z${i}`);
    const job = await postsJob(ws, [...notFound, ...postUrls(3)]);
    const { text, json, summary } = await runTextAndJson(ws, job, '');

    expect(text.code, text.stderr).toBe(EXIT.ok);
    expect(json.code, json.stderr).toBe(EXIT.ok);
    expect(summary.jobs[0]).toMatchObject({ done: 3, notFound: 12, warnings: [] });
    expect(text.stderr).not.toContain(HINT);
    expect(text.stdout).not.toContain('warning');
  });

  it(`post-details behind a wrong path prefix with fewer than ${MIN} answers`, async () => {
    const ws = await workspace();
    const job = await postsJob(ws, postUrls(MIN - 1));
    const { text, summary } = await runTextAndJson(ws, job, '/api');

    expect(text.code, text.stderr).toBe(EXIT.ok);
    expect(summary.jobs[0]).toMatchObject({ notFound: MIN - 1, warnings: [] });
    expect(text.stderr).not.toContain('answers were 404');
    expect(text.stdout).not.toContain('warning');
  });

  it('similar-companies behind a wrong path prefix: still stops at once on the 404 that is not the API\'s (exit 1)', async () => {
    const ws = await workspace();
    await ws.write('leads.csv', csv(['company_url'], companyUrls(12).map((u) => [u])));
    const job = await ws.job('leads', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, rate: FAST_RATE, retry: FAST_RETRY });
    const { text, summary } = await runTextAndJson(ws, job, '/api');

    expect(text.code).toBe(EXIT.fatal);
    expect(text.stdout).toContain('[UNEXPECTED_RESPONSE]');
    expect(summary.error?.code).toBe('UNEXPECTED_RESPONSE');
    expect(summary.jobs[0]!.warnings).toEqual([]);
    expect(text.stderr).not.toContain('answers were 404');
  });
});

describe('NotFoundOnlyWatch', () => {
  it("keeps the token out of the body's message it quotes, whatever the token's length", () => {
    for (const secret of ['tk9', 'long-secret-token-77']) {
      const watch = new NotFoundOnlyWatch('post-details', 2, [secret]);
      watch.record({ kind: 'not_found', message: `no route for /x?token=${secret}` });
      watch.record({ kind: 'not_found', message: null });
      const w = watch.warning('posts')!;
      expect(w.bodyMessage).toBe('no route for /x?token=[REDACTED]');
      expect(w.message).not.toContain(secret);
    }
  });

  it('counts answers only: a failed task neither counts nor clears it, a 200 with data clears it', () => {
    const failed = { kind: 'failed', retryable: true, code: 'NETWORK', message: 'x', error: null } as const;
    const watch = new NotFoundOnlyWatch('search-jobs', 2, []);
    watch.record({ kind: 'not_found', message: 'Not Found' });
    watch.record(failed);
    expect(watch.warning('s')).toBeNull();
    watch.record({ kind: 'not_found', message: 'Not Found' });
    expect(watch.warning('s')?.answers).toBe(2);
    watch.record({ kind: 'done', lastPage: true, drift: new DriftTally() });
    expect(watch.warning('s')).toBeNull();
  });
});
