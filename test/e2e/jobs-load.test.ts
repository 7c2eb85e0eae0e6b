import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { jsonErrorOffset, loadAllJobs, loadJob, loadJobFiles } from '../../src/jobs/load.ts';
import { JobFileError } from '../../src/jobs/job-error.ts';
import { runCli } from '../soak/cli-process.ts';
import { startSandbox } from '../../src/sandbox/server.ts';

const TOKEN = 'jobs-load-token';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const definePath = fileURLToPath(new URL('../../src/index.ts', import.meta.url));

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'netingest-jobs-'));
  await mkdir(join(root, 'jobs'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

let seq = 0;
/** Writes a job file in its own folder under root/jobs-N and returns the folder's name (relative to root). */
async function jobDir(files: Record<string, string>): Promise<string> {
  const dir = `jobs-${++seq}`;
  await mkdir(join(root, dir));
  for (const [name, text] of Object.entries(files)) await writeFile(join(root, dir, name), text);
  return dir;
}

async function loadError(path: string): Promise<JobFileError> {
  const err = await loadJob(path, { cwd: root }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(JobFileError);
  expect((err as JobFileError).code).toBe('JOB_INVALID');
  return err as JobFileError;
}

const leadsJson = JSON.stringify({ operation: 'similar-companies', input: { csv: 'data/leads.csv', column: 'company_url' }, pages: 2 });

describe('loadJob', () => {
  it('loads a .json job: name from the file, paths resolved against cwd, original kept', async () => {
    const dir = await jobDir({ 'leads.json': leadsJson });
    const job = await loadJob(`${dir}/leads.json`, { cwd: root });
    expect(job.name).toBe('leads');
    expect(job.file).toBe(join(root, dir, 'leads.json'));
    expect(job.input).toEqual({ csv: 'data/leads.csv', csvPath: join(root, 'data/leads.csv'), column: 'company_url' });
    expect(job.pages).toBe(2);
  });

  it('loads a .json file with a BOM', async () => {
    const dir = await jobDir({ 'bom.json': `\ufeff${leadsJson}` });
    expect((await loadJob(`${dir}/bom.json`, { cwd: root })).name).toBe('bom');
  });

  it('loads a .ts job written with defineJob', async () => {
    const dir = await jobDir({
      'posts.ts': [
        `import { defineJob } from ${JSON.stringify(definePath)};`,
        `const days: number = 3;`,
        `export default defineJob({ name: 'engagement', operation: 'post-details', input: { csv: 'p.csv', column: 'u' }, refreshAfterDays: days });`,
      ].join('\n'),
    });
    const job = await loadJob(join(root, dir, 'posts.ts'));
    expect(job).toMatchObject({ name: 'engagement', operation: 'post-details', refreshAfterDays: 3, pages: 1 });
  });

  it('through the CLI, loads a .ts job kept outside any ESM package (a folder with no package.json)', async () => {
    // Under vitest, import() goes through vite and works either way: the CLI's tsx loader is the one that broke.
    const dir = await jobDir({
      'posts.ts': [
        `import { defineJob } from ${JSON.stringify(definePath)};`,
        `export default defineJob({ name: 'engagement', operation: 'post-details', input: { csv: 'p.csv', column: 'post_url' } });`,
      ].join('\n'),
      'bare.ts': `export default { operation: 'post-details', input: { csv: 'p.csv', column: 'post_url' } };`,
      'broken.ts': `import { defineJob } from './missing.ts';\nexport default defineJob({ operation: 'post-details', input: { csv: 'p.csv', column: 'u' } });`,
      'p.csv': 'post_url\nhttps://network.com/posts/jane_a-activity-1\n',
    });
    const cwd = join(root, dir);
    // One plan of the three (a CLI start with tsx each was most of this test): the broken one is named and
    // skipped (exit 2), the two others planned.
    const cli = await runCli(['plan', 'posts.ts', 'bare.ts', 'broken.ts', '--db', 'none.db'], { cwd });
    expect(cli.stdout.match(/input: 1 task\b/g), cli.stdout).toHaveLength(2);
    expect(cli.stdout).toMatch(/\bengagement\b[^]*\bbare\b/);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toBe(`netingest: broken.ts: failed to load: Cannot find module './missing.ts' [JOB_INVALID]\n`);
  }, 90_000);

  it('validates a .ts job with the same schema, naming the file and field', async () => {
    const dir = await jobDir({
      'bad.ts': `export default { operation: 'search-jobs', input: { csv: 'q.csv' }, rate: { requestsPerMinute: -1 } };`,
    });
    const err = await loadError(`${dir}/bad.ts`);
    expect(err.message).toBe(`${dir}/bad.ts: rate.requestsPerMinute: must be a positive number`);
  });

  it('rejects a module that throws, naming the file', async () => {
    const dir = await jobDir({ 'boom.ts': `throw new Error('kaboom');\nexport default {};` });
    const err = await loadError(`${dir}/boom.ts`);
    expect(err.message).toBe(`${dir}/boom.ts: failed to load: kaboom`);
  });

  it('hides the API token of its environment in what the job code threw: the message is printed and stored (runs.error)', async () => {
    const token = 'env-token-for-a-job-6f2a';
    const saved = process.env.NETINGEST_API_TOKEN;
    process.env.NETINGEST_API_TOKEN = token;
    onTestFinished(() => void (saved === undefined ? delete process.env.NETINGEST_API_TOKEN : (process.env.NETINGEST_API_TOKEN = saved)));
    const dir = await jobDir({
      'leaks.ts': `throw new Error('cannot fetch https://x/?t=' + process.env.NETINGEST_API_TOKEN);\nexport default {};`,
      'leaks-later.ts': `export default Promise.reject(new Error('bad token ' + process.env.NETINGEST_API_TOKEN));`,
    });
    expect((await loadError(`${dir}/leaks.ts`)).message).toBe(`${dir}/leaks.ts: failed to load: cannot fetch https://x/?t=[REDACTED]`);
    expect((await loadError(`${dir}/leaks-later.ts`)).message).toBe(`${dir}/leaks-later.ts: its default export failed: bad token [REDACTED]`);
  });

  it('refuses a job whose export throws while it is read or validated (a getter, a Proxy, a then), naming the file, the token hidden; the other files still load', async () => {
    const token = 'env-token-for-a-getter-9c1d';
    const saved = process.env.NETINGEST_API_TOKEN;
    process.env.NETINGEST_API_TOKEN = token;
    onTestFinished(() => void (saved === undefined ? delete process.env.NETINGEST_API_TOKEN : (process.env.NETINGEST_API_TOKEN = saved)));
    const input = `{ csv: 'p.csv', column: 'u' }`;
    const dir = await jobDir({
      'a-name.ts': `export default { get name() { throw new Error('x ' + process.env.NETINGEST_API_TOKEN); }, operation: 'post-details', input: ${input} };`,
      'b-input.ts': `export default { operation: 'post-details', input: { get csv() { throw new Error('y ' + process.env.NETINGEST_API_TOKEN); }, column: 'u' } };`,
      'c-fine.ts': `export default { operation: 'post-details', input: ${input} };`,
      'd-then.ts': `export default { get then() { throw new Error('t ' + process.env.NETINGEST_API_TOKEN); } };`,
      'e-proxy.ts': `export default new Proxy({}, { get() { throw new Error('p ' + process.env.NETINGEST_API_TOKEN); } });`,
      'f-odd.ts': `export default { get operation() { throw Object.create(null); } };`,
      'g-null.ts': `throw null;\nexport default {};`,
    });
    // Before: "unexpected error: x env-token-…" (exit 1), no file named, and no other job ran.
    const files = ['a-name.ts', 'b-input.ts', 'c-fine.ts', 'd-then.ts', 'e-proxy.ts', 'f-odd.ts', 'g-null.ts'];
    const { jobs, broken } = await loadJobFiles(files.map((f) => `${dir}/${f}`), { cwd: root });
    expect(broken.map((e) => e.message)).toEqual([
      `${dir}/a-name.ts: its default export could not be read: x [REDACTED]`,
      `${dir}/b-input.ts: its default export could not be read: y [REDACTED]`,
      `${dir}/d-then.ts: its default export could not be read: t [REDACTED]`,
      `${dir}/e-proxy.ts: its default export could not be read: p [REDACTED]`,
      `${dir}/f-odd.ts: its default export could not be read: a thrown object that cannot be shown as text`,
      `${dir}/g-null.ts: failed to load: null`,
    ]);
    expect(jobs.map((j) => j.name)).toEqual(['c-fine']);
  });

  it('rejects a default export that is a promise failing or never settling, and a load that never ends, naming the file', async () => {
    const dir = await jobDir({
      'rejects.ts': `export default Promise.reject(new Error('async boom'));`,
      'pending.ts': `export default new Promise(() => {});`,
      'stuck.mts': `await new Promise(() => {});\nexport default {};`,
    });
    const failed = await loadJob(`${dir}/rejects.ts`, { cwd: root }).catch((e: unknown) => e);
    expect((failed as Error).message).toBe(`${dir}/rejects.ts: its default export failed: async boom`);
    // Before: the command waited on it until the event loop emptied, and node ended it with exit 13 and nothing said.
    const pending = await loadJob(`${dir}/pending.ts`, { cwd: root, moduleTimeoutMs: 300 }).catch((e: unknown) => e);
    expect(pending).toBeInstanceOf(JobFileError);
    expect((pending as Error).message).toBe(`${dir}/pending.ts: took more than 0.3 s to give its default export`);
    const stuck = await loadJob(`${dir}/stuck.mts`, { cwd: root, moduleTimeoutMs: 300 }).catch((e: unknown) => e);
    expect((stuck as Error).message).toBe(`${dir}/stuck.mts: took more than 0.3 s to load`);
  });

  it('a module whose code never returns (an endless loop) ends the process once it blocked it for the limit, naming the file', async () => {
    const dir = await jobDir({ 'spins.ts': 'while (true) {}\nexport default {};' });
    // Before: no timer fired and no signal was handled, the process spun for ever (SIGKILL alone ended it).
    const code = `import { loadJob } from ${JSON.stringify(join(repoRoot, 'src/jobs/load.ts'))};
      await loadJob(${JSON.stringify(`${dir}/spins.ts`)}, { cwd: ${JSON.stringify(root)}, blockedLimitMs: 500 });`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    // Without the watch the child spins until the test times out: it must not outlive it.
    onTestFinished(() => void child.kill('SIGKILL'));
    const [exitCode, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    expect({ exitCode, signal }).toEqual({ exitCode: null, signal: 'SIGKILL' });
    expect(stderr).toBe(`netingest: ${dir}/spins.ts: its code kept the process busy for 0.5 s while loading (code that never returns, such as an endless loop): stopped\n`);
  });

  it('through the CLI, a .ts job that leaves a timer running does not keep the finished command alive', async () => {
    const dir = await jobDir({
      'keepsalive.ts': `setInterval(() => {}, 1000);\nexport default { operation: 'post-details', input: { csv: 'p.csv', column: 'u' } };`,
      'p.csv': 'u\nhttps://network.com/posts/jane_a-activity-1\n',
    });
    // Before: `plan` printed its report and then never exited (a cron or systemd oneshot unit never ended).
    const cli = await runCli(['plan', 'keepsalive.ts', '--db', 'none.db'], { cwd: join(root, dir) });
    expect(cli.stdout).toMatch(/input: 1 task\b/);
    expect(cli.code).toBe(0);
  }, 90_000);

  it('through the CLI, a .ts job that calls process.exit while it loads is refused as broken; the other job is planned', async () => {
    const job = `{ operation: 'post-details', input: { csv: 'p.csv', column: 'u' } }`;
    const dir = await jobDir({
      'a-exits.ts': `process.exit(0);\nexport default ${job};`,
      'b-fine.ts': `export default ${job};`,
      'p.csv': 'u\nhttps://network.com/posts/jane_a-activity-1\n',
    });
    // Before: the command ended at once with exit 0 and printed nothing (cron: a night that did nothing, logged as fine).
    const cli = await runCli(['plan', 'a-exits.ts', 'b-fine.ts', '--db', 'none.db'], { cwd: join(root, dir) });
    expect(cli.stderr).toContain('a-exits.ts: failed to load: called process.exit(0): a job file defines a job, it does not end the process');
    expect(cli.stdout).toMatch(/b-fine[\s\S]*input: 1 task\b/);
    expect(cli.code).toBe(2);
  }, 90_000);

  it('rejects a module that calls process.exit, naming the file', async () => {
    const dir = await jobDir({ 'exits.ts': `process.exit(3);\nexport default {};` });
    const err = await loadError(`${dir}/exits.ts`);
    expect(err.message).toBe(`${dir}/exits.ts: failed to load: called process.exit(3): a job file defines a job, it does not end the process`);
  });

  it('through the CLI, a .ts job whose timer calls process.exit mid-run: ignored and said, the run goes to its end', async () => {
    const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 1_000 }, notFoundRate: 0, latencyMs: 100 });
    onTestFinished(() => sandbox.stop());
    const posts = Array.from({ length: 10 }, (_, i) => `https://www.network.com/posts/a-${i}_t-activity-${7100000000000000000n + BigInt(i)}-x`);
    const dir = await jobDir({
      // 300 ms after it loads, ten calls of 100 ms one at a time (and the balance check before them) are under way.
      'exits-later.ts': `setTimeout(() => process.exit(0), 300);
export default { operation: 'post-details', input: { csv: 'p.csv', column: 'u' }, rate: { requestsPerMinute: 6000, concurrency: 1 } };`,
      'p.csv': `u\n${posts.join('\n')}\n`,
    });
    // Before: the process ended at once with exit 0 and no summary, its run left running and its call in flight unwritten.
    const cli = await runCli(['run', 'exits-later.ts', '--db', 'x.db', '--json'], {
      cwd: join(root, dir), env: { NETINGEST_API_URL: sandbox.url, NETINGEST_API_TOKEN: TOKEN },
    });
    expect(cli.stderr).toContain(`netingest: warning: exits-later.ts: its code called process.exit(0): a job file defines a job, it does not end the process: ignored, the command goes on\n`);
    expect(cli.code, cli.stderr).toBe(0);
    const summary = JSON.parse(cli.stdout);
    expect(summary.status).toBe('completed');
    expect(summary.jobs[0].done).toBe(10);
  }, 90_000);

  it('rejects a module without a default export', async () => {
    const dir = await jobDir({ 'nodefault.ts': `export const job = { operation: 'post-details' };` });
    const err = await loadError(`${dir}/nodefault.ts`);
    expect(err.message).toBe(`${dir}/nodefault.ts: has no default export: write \`export default defineJob({ ... })\``);
  });

  it('points at the line and column of a JSON syntax error, as file:line:column', async () => {
    const dir = await jobDir({ 'syntax.json': '{\n  "operation": "post-details",\n  "pages": 1,\n}\n' });
    const err = await loadError(`${dir}/syntax.json`);
    expect(err.message).toBe(`${dir}/syntax.json:4:1: invalid JSON: Expected double-quoted property name`);
    expect(err.issues).toEqual([{ field: '', message: 'invalid JSON: Expected double-quoted property name', line: 4, column: 1 }]);
  });

  it('refuses a key written twice in one object, as file:line:column: JSON.parse would drop the first (a credits cap) unsaid', async () => {
    const job = [
      '{ "operation": "post-details", "input": { "csv": "p.csv", "column": "u" },',
      '  "credits": { "maxPerRun": 10 }, "description": "{\\"credits\\": 1}",',
      '  "retry": { "retries": 1 }, "rate": { "retries": 2 },',
      '  "credits": { "reserve": 5 } }',
    ].join('\n');
    const dir = await jobDir({ 'twice.json': job, 'escaped.json': '{ "pages": 1, "pa\\u0067es": 2 }' });
    expect((await loadError(`${dir}/twice.json`)).message).toBe(`${dir}/twice.json:4:3: "credits" is written twice in one object (JSON would keep only the last): merge them`);
    expect((await loadError(`${dir}/escaped.json`)).message).toBe(`${dir}/escaped.json:1:15: "pages" is written twice in one object (JSON would keep only the last): merge them`);
  });

  it('points at a .ts syntax error as file:line:column in one line, counting characters as the editor does', async () => {
    const dir = await jobDir({
      'syntax.ts': ["// Café crème", 'export default {', "  operation: 'post-details', name: 'café',,", '};', ''].join('\n'),
      'uses-helper.ts': "import input from './helper.ts';\nexport default { operation: 'post-details', input };\n",
      'helper.ts': "export default { csv: 'p.csv', column: 'u' ;\n",
    });
    const err = await loadError(`${dir}/syntax.ts`);
    expect(err.message).toBe(`${dir}/syntax.ts:3:43: invalid TypeScript: Expected identifier but found ","`);
    expect(err.issues).toEqual([{ field: '', message: 'invalid TypeScript: Expected identifier but found ","', line: 3, column: 43 }]);
    // The error is in a module the job imports: that file is the one to fix, so it is named.
    expect((await loadError(`${dir}/uses-helper.ts`)).message).toBe(
      `${dir}/uses-helper.ts: failed to load: ${dir}/helper.ts:1:44: invalid TypeScript: Expected "}" but found ";"`,
    );
  });

  it('finds the position of a JSON error whose engine message has none (Node 20: "Unexpected token")', async () => {
    const text = [
      '{',
      '  "operation": "search-jobs",',
      '  "input": { "csv": "data/x.csv" },',
      '  "request": {',
      '    "location": [',
      '      "germany",',
      '      "france",]',
      '  }',
      '}',
      '',
    ].join('\n');
    const dir = await jobDir({ 'comma.json': text, 'literal.json': '{\r\n  "operation": "post-details",\r\n  "pages": tru\r\n}\r\n' });
    expect((await loadError(`${dir}/comma.json`)).message).toBe(`${dir}/comma.json:7:16: invalid JSON: Unexpected token ']'`);
    expect((await loadError(`${dir}/literal.json`)).message).toBe(`${dir}/literal.json:3:15: invalid JSON: Unexpected token '\\r'`);
  });

  it('reports a truncated JSON file just past its last character, not on a trailing blank line', async () => {
    const dir = await jobDir({ 'cut.json': '{\n  "operation": "post-details"', 'cut-nl.json': '{\n  "operation": [1, 2\n\n' });
    expect((await loadError(`${dir}/cut.json`)).message).toBe(`${dir}/cut.json:2:30: invalid JSON: Expected ',' or '}' after property value`);
    expect((await loadError(`${dir}/cut-nl.json`)).message).toBe(`${dir}/cut-nl.json:2:21: invalid JSON: Expected ',' or ']' after array element`);
  });

  it('names field errors of a .json job', async () => {
    const dir = await jobDir({
      'wrong.json': JSON.stringify({ operation: 'post-details', input: { csv: 'p.csv' }, rate: { requestsPerMinute: 'fast' }, extra: true }),
    });
    const err = await loadError(`${dir}/wrong.json`);
    expect(err.message.split('\n')).toEqual([
      `${dir}/wrong.json: rate.requestsPerMinute: must be a number (got "fast")`,
      `${dir}/wrong.json: input.column: is required`,
      `${dir}/wrong.json: extra: unknown field; allowed here: name, description, pages, rate, retry, credits, refreshAfterDays, keepRawDays, operation, input, request`,
    ]);
  });

  it('names each misspelt key of a .json or .ts job, with the field it most likely means', async () => {
    const dir = await jobDir({
      'typo.json': JSON.stringify({ opertion: 'post-details', input: { cvs: 'p.csv', column: 'post_url' } }, null, 2),
      'typo.ts': `export default { operation: 'post-details', input: { csv: 'p.csv', column: 'post_url' }, refreshAfterDay: 3 };`,
    });
    expect((await loadError(`${dir}/typo.json`)).message.split('\n')).toEqual([
      `${dir}/typo.json: operation: is required: one of "similar-companies", "post-details", "search-jobs"`,
      `${dir}/typo.json: input.csv: is required`,
      `${dir}/typo.json: input.cvs: unknown field (did you mean "csv"?)`,
      `${dir}/typo.json: opertion: unknown field (did you mean "operation"?)`,
    ]);
    expect((await loadError(`${dir}/typo.ts`)).message).toBe(`${dir}/typo.ts: refreshAfterDay: unknown field (did you mean "refreshAfterDays"?)`);
  });

  it('rejects a missing file and an unknown extension', async () => {
    expect((await loadError('nope.json')).message).toBe('nope.json: cannot read job file: file not found');
    expect((await loadError('nope.ts')).message).toBe('nope.ts: cannot read job file: file not found');
    const dir = await jobDir({ 'job.yaml': 'operation: post-details' });
    expect((await loadError(`${dir}/job.yaml`)).message).toBe(`${dir}/job.yaml: not a job file: expected .json or .ts (got ".yaml")`);
  });
});

describe('loadAllJobs', () => {
  it('loads every .ts and .json job in name order, skipping other files', async () => {
    const dir = await jobDir({
      'b.json': leadsJson,
      'a.ts': `export default { operation: 'post-details', input: { csv: 'p.csv', column: 'u' } };`,
      'notes.md': '# not a job',
      '_draft.json': '{ broken',
      'types.d.ts': 'export {};',
    });
    const jobs = await loadAllJobs(dir, { cwd: root });
    expect(jobs.map((j) => j.name)).toEqual(['a', 'b']);
  });

  it('refuses two jobs with the same name, naming both files', async () => {
    const dir = await jobDir({ 'a.json': JSON.stringify({ ...JSON.parse(leadsJson), name: 'same' }), 'b.json': JSON.stringify({ ...JSON.parse(leadsJson), name: 'same' }) });
    const err = await loadAllJobs(dir, { cwd: root }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobFileError);
    expect((err as Error).message).toBe(`${dir}/b.json: name: name "same" is already used by ${dir}/a.json; job names must be unique`);
  });

  it('reports the problems of every file at once', async () => {
    const dir = await jobDir({ 'a.json': '{', 'b.json': JSON.stringify({ operation: 'post-details', input: { csv: 'p.csv' } }) });
    const err = (await loadAllJobs(dir, { cwd: root }).catch((e: unknown) => e)) as JobFileError;
    expect(err).toBeInstanceOf(JobFileError);
    expect(err.message.split('\n')).toEqual([
      `${dir}: ${dir}/a.json:1:2: invalid JSON: Expected property name or '}'`,
      `${dir}: ${dir}/b.json: input.column: is required`,
    ]);
  });

  it('rejects a missing jobs directory', async () => {
    await expect(loadAllJobs('no-such-dir', { cwd: root })).rejects.toThrow('no-such-dir: cannot read the jobs directory: directory not found');
  });

  it('loads the shipped example jobs', async () => {
    const jobs = await loadAllJobs('jobs', { cwd: repoRoot });
    expect(jobs.map((j) => [j.name, j.operation])).toEqual([
      ['job-search', 'search-jobs'],
      ['lookalikes', 'similar-companies'],
      ['post-engagement', 'post-details'],
    ]);
  });
});

describe('loadJobFiles', () => {
  it('loads every file it can and returns the error of each broken one, and name clashes apart', async () => {
    const dir = await jobDir({
      'a.json': leadsJson,
      'b.json': '{',
      'c.json': JSON.stringify({ ...JSON.parse(leadsJson), retries: 3 }),
      'd.json': JSON.stringify({ ...JSON.parse(leadsJson), name: 'a' }),
      'e.json': JSON.stringify({ ...JSON.parse(leadsJson), name: 'e' }),
    });
    const files = ['a', 'b', 'c', 'd', 'e'].map((n) => `${dir}/${n}.json`);
    const { jobs, broken, duplicates } = await loadJobFiles(files, { cwd: root });
    expect(jobs.map((j) => j.name)).toEqual(['a', 'e']);
    expect(broken.map((e) => e.message)).toEqual([
      `${dir}/b.json:1:2: invalid JSON: Expected property name or '}'`,
      expect.stringMatching(new RegExp(`^${dir}/c\\.json: retries: unknown field`)),
    ]);
    expect(broken.every((e) => e instanceof JobFileError)).toBe(true);
    expect(duplicates.map((e) => e.message)).toEqual([`${dir}/d.json: name: name "a" is already used by ${dir}/a.json; job names must be unique`]);
  });
});

describe('jsonErrorOffset', () => {
  it('stops where JSON.parse says it stopped, and finds nothing in valid JSON', () => {
    const broken = [
      '{"a":1,]', '{"a":1 "b":2}', '{"a":1}x', '{"a":"x\n"}', '{', '{a:1}', '{"a":01}', '{"a":-}', '{"a":"\\q"}',
      '{"a":1.}', '[1 2]', '[1e+]', '{"a":"\\u12g4"}', '{"a" 1}', '  ', '[[[[[1]]]]', '{"a":[{"b":{}},]}', '{"a":tru}', '[nul]',
    ];
    for (const text of broken) {
      const message = (() => {
        try {
          JSON.parse(text);
          return 'parsed';
        } catch (err) {
          return (err as Error).message;
        }
      })();
      const offset = jsonErrorOffset(text);
      const why = `${JSON.stringify(text)}: ${message}`;
      const engine = /at position (\d+)/.exec(message)?.[1];
      const token = /^Unexpected token '(.+?)'/.exec(message)?.[1];
      if (engine !== undefined) expect(offset, why).toBe(Number(engine));
      else if (token !== undefined) expect(text[offset ?? -1], why).toBe(token); // Node 20 names the token only
      else expect(offset, why).toBe(text.length);
    }
    expect(jsonErrorOffset('{"a":[1,-2.5e-3,true,false,null,"\\u00e9\\n",{}],"b":{"c":[]}}')).toBeUndefined();
    expect(jsonErrorOffset('['.repeat(100_000) + ']'.repeat(100_000))).toBeUndefined();
  });
});
