/**
 * Messages about bad input as the user sees them from the command line: what `plan` and `run` print, the exit
 * code, and what the database records. A job file that cannot be read is met by the built CLI as a child
 * process with `plan` (the whole of its stderr, a .ts job compiled as users run it), and with `run` through the
 * same command code in this process, as are the other messages, without a Node start per call.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';
import { FAST_RATE, FAST_RETRY, cliEnv, inProcess, postUrls, operationRequests, query, runCli, type Workspace, useWorkspaces } from '../support/run-helpers.ts';

const TOKEN = 'input-msgs-token-5b1d';
// Some tests start the CLI two or three times; on a loaded two-core machine one start can take 10 s.
const CLI_TESTS_MS = 90_000;
const sandboxes = useSandboxes();
const workspaces = useWorkspaces();

async function setUp(): Promise<{ sandbox: Sandbox; ws: Workspace }> {
  const sandbox = await sandboxes({ tokens: { [TOKEN]: 10_000 } });
  const ws = await workspaces();
  return { sandbox, ws };
}

describe('a stray quote that swallows the lines after it', () => {
  it('plan and run name the span and say those lines were not read as rows; invalid_inputs records it', async () => {
    const { sandbox, ws } = await setUp();
    const urls = postUrls(5);
    await ws.write(
      'posts.csv',
      ['post_url,n', `${urls[0]},1`, `"${urls[1]},omar`, `${urls[2]},3`, `${urls[3]},"4`, `${urls[4]},5`].join('\n') + '\n',
    );
    const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
    const env = cliEnv(sandbox, TOKEN);
    const span = /posts\.csv:3: malformed CSV row: lines 3-5 were read as one record \(a quoted field seems unclosed there\): .*; lines 4-5 were not read as rows of their own/;

    const plan = await inProcess(['plan', job, '--db', ws.db], env, { cwd: ws.dir });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('input: 2 tasks, 1 invalid row, 0 duplicates');
    expect(plan.stdout).toMatch(span);

    const run = await inProcess(['run', job, '--db', ws.db], env, { cwd: ws.dir });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(span);
    const invalid = query<{ line: number; field: string | null; reason: string }>(ws, 'SELECT line, field, reason FROM invalid_inputs');
    expect(invalid).toEqual([{ line: 3, field: null, reason: expect.stringMatching(/^malformed CSV row: lines 3-5 .*lines 4-5 were not read as rows/) }]);
  }, CLI_TESTS_MS);

  it('in a list of URLs alone, where the record keeps its one field, plan names the span too, not just "not a URL"', async () => {
    const ws = await workspaces();
    const urls = postUrls(4);
    await ws.write('posts.csv', ['post_url', urls[0], `"${urls[1]}`, urls[2], `${urls[3]}"`].join('\n') + '\n');
    const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' } });
    const plan = await inProcess(['plan', job, '--db', ws.db], { NETINGEST_API_URL: '' }, { cwd: ws.dir });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('input: 1 task, 1 invalid row, 0 duplicates');
    expect(plan.stdout).toMatch(/posts\.csv:3 \(post_url\): lines 3-5 were read as one record \(a quoted field seems unclosed there\): not a URL .*; lines 4-5 were not read as rows of their own/);
  }, CLI_TESTS_MS);

  it('in a list of searches, the cell that holds the lines is refused: not one paid search for the rows it swallowed', async () => {
    const ws = await workspaces();
    await ws.write('q.csv', ['keywords,location', 'nurse,germany', '"robotics,france', 'driver,spain', 'welder",italy', 'baker,austria'].join('\n') + '\n');
    const job = await ws.job('q', { operation: 'search-jobs', input: { csv: 'q.csv' } });
    const plan = await inProcess(['plan', job, '--db', ws.db], { NETINGEST_API_URL: '' }, { cwd: ws.dir });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('input: 2 tasks, 1 invalid row, 0 duplicates');
    expect(plan.stdout).toMatch(/q\.csv:3 \(keywords\): lines 3-5 were read as one record .*: holds a line break; lines 4-5 were not read as rows of their own/);
  }, CLI_TESTS_MS);
});

describe('a job file that is not valid JSON', () => {
  it('plan and run exit 2 with file:line:column, even where Node gives no position, and no stack trace', async () => {
    const ws = await workspaces();
    await ws.write('x.csv', 'keywords\nnurse\n');
    const text = ['{', '  "operation": "search-jobs",', '  "input": { "csv": "x.csv" },', '  "request": {', '    "location": [', '      "germany",', '      "france",]', '  }', '}', ''];
    await ws.write('x.json', text.join('\n'));
    const env = { NETINGEST_API_URL: 'http://127.0.0.1:9', NETINGEST_API_TOKEN: 'unused-token' };
    // Both stop while loading the job, before the database is opened: plan as a child process (all of its
    // stderr), run through the CLI's code in this process alongside.
    const results = await Promise.all([runCli(['plan', 'x.json', '--db', ws.db], { cwd: ws.dir, env }), inProcess(['run', 'x.json', '--db', ws.db], env, { cwd: ws.dir })]);
    for (const r of results) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe("netingest: x.json:7:16: invalid JSON: Unexpected token ']' [JOB_INVALID]\n");
    }
  }, CLI_TESTS_MS);
});

describe('a .ts job file that does not compile', () => {
  it('plan and run exit 2 with file:line:column and what is wrong, in one line like a JSON syntax error', async () => {
    const ws = await workspaces();
    await ws.write('posts.csv', 'post_url\n');
    await ws.write('x.ts', ['export default {', "  operation: 'post-details',", "  input: { csv: 'posts.csv', column: 'post_url' },,", '};', ''].join('\n'));
    const env = { NETINGEST_API_URL: 'http://127.0.0.1:9', NETINGEST_API_TOKEN: 'unused-token' };
    // plan compiles the job with the CLI's tsx as users run it; run, through the CLI's code in this process
    // (vite compiles it there), gives the same line.
    const results = await Promise.all([runCli(['plan', 'x.ts', '--db', ws.db], { cwd: ws.dir, env }), inProcess(['run', 'x.ts', '--db', ws.db], env, { cwd: ws.dir })]);
    for (const r of results) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe('netingest: x.ts:3:51: invalid TypeScript: Expected identifier but found "," [JOB_INVALID]\n');
    }
  }, CLI_TESTS_MS);
});

describe('a job file with a misspelt key', () => {
  it('plan and run exit 2 naming every unknown key with the field it most likely means', async () => {
    const ws = await workspaces();
    await ws.write('posts.csv', 'post_url\n');
    await ws.write('typo.json', JSON.stringify({ opertion: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, refreshAfterDay: 3 }));
    const env = { NETINGEST_API_URL: 'http://127.0.0.1:9', NETINGEST_API_TOKEN: 'unused-token' };
    for (const command of ['plan', 'run']) {
      const r = await inProcess([command, 'typo.json', '--db', ws.db], env, { cwd: ws.dir });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe(
        [
          'netingest: typo.json: operation: is required: one of "similar-companies", "post-details", "search-jobs"',
          'typo.json: opertion: unknown field (did you mean "operation"?)',
          'typo.json: refreshAfterDay: unknown field (did you mean "refreshAfterDays"?) [JOB_INVALID]',
          '',
        ].join('\n'),
      );
    }
  }, CLI_TESTS_MS);
});

describe('a job file with a group\'s field at the top level', () => {
  it('plan exits 2 saying which group the field goes inside', async () => {
    const ws = await workspaces();
    await ws.write('posts.csv', 'post_url\n');
    await ws.write('flat.json', JSON.stringify({ name: 'x', operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, retries: 3 }));
    const env = { NETINGEST_API_URL: 'http://127.0.0.1:9', NETINGEST_API_TOKEN: 'unused-token' };
    const r = await inProcess(['plan', 'flat.json', '--db', ws.db], env, { cwd: ws.dir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe('netingest: flat.json: retries: unknown field (did you mean "retry.retries"? it goes inside "retry") [JOB_INVALID]\n');
  }, CLI_TESTS_MS);
});

describe('a header naming a column twice', () => {
  it('is read when the job does not read that column (enrich keeps both values); refused, naming file, line and column, when it does', async () => {
    const { sandbox, ws } = await setUp();
    const urls = postUrls(2);
    await ws.write('posts.csv', `post_url,note,note\n${urls[0]},first a,first b\n${urls[1]},second a,second b\n`);
    const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
    const env = cliEnv(sandbox, TOKEN);
    const run = await inProcess(['run', job, '--db', ws.db], env, { cwd: ws.dir });
    expect(run.code, run.stderr).toBe(0);
    expect(operationRequests(sandbox)).toHaveLength(2);
    const out = join(ws.dir, 'enriched.csv');
    const enrich = await inProcess(['enrich', job, '--db', ws.db, '--out', out], {}, { cwd: ws.dir });
    expect(enrich.code, enrich.stderr).toBe(0);
    const rows = parse(await readFile(out, 'utf8')) as string[][];
    expect(rows.map((r) => r.slice(0, 3))).toEqual([['post_url', 'note', 'note'], [urls[0], 'first a', 'first b'], [urls[1], 'second a', 'second b']]);

    await ws.write('posts.csv', `note,post_url,post_url\nx,${urls[0]},${urls[1]}\n`);
    for (const command of ['plan', 'run']) {
      const r = await inProcess([command, job, '--db', ws.db], env, { cwd: ws.dir });
      expect(r.code, `${command}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/^netingest: posts\.csv: line 1: column "post_url" appears twice in the header row \[INPUT_INVALID\]$/m);
    }
    expect(operationRequests(sandbox)).toHaveLength(2);
  }, CLI_TESTS_MS);

  it('search-jobs: a parameter column named twice is refused with its line; another column named twice is read', async () => {
    const { sandbox, ws } = await setUp();
    const job = await ws.job('search', { operation: 'search-jobs', input: { csv: 'queries.csv' }, rate: FAST_RATE, retry: FAST_RETRY });
    await ws.write('queries.csv', 'keywords,notes,notes\nnurse,a,b\n');
    const ok = await inProcess(['plan', job, '--db', ws.db], {}, { cwd: ws.dir });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('input: 1 task, 0 invalid rows, 0 duplicates');
    await ws.write('queries.csv', 'keywords,location,keywords\nnurse,berlin,doctor\n');
    const r = await inProcess(['plan', job, '--db', ws.db], cliEnv(sandbox, TOKEN), { cwd: ws.dir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('queries.csv: line 1: columns "keywords" and "keywords" both name the search parameter keywords');
  }, CLI_TESTS_MS);
});

describe('search-jobs columns', () => {
  it('a misspelt parameter column, or none at all, stops plan and run with exit 2 before any call', async () => {
    const { sandbox, ws } = await setUp();
    await ws.write('queries.csv', 'keyword,location\ndata engineer,germany\nanalyst,france\n');
    const job = await ws.job('search', { operation: 'search-jobs', input: { csv: 'queries.csv' }, rate: FAST_RATE, retry: FAST_RETRY });
    for (const command of ['plan', 'run']) {
      const r = await inProcess([command, job, '--db', ws.db], cliEnv(sandbox, TOKEN), { cwd: ws.dir });
      expect(r.code, `${command}: ${r.stderr}`).toBe(2);
      // `run` logs its start and end around the error, as for an unknown input.column.
      expect(r.stderr).toMatch(/^netingest: queries\.csv: line 1: column "keyword" is not a search parameter; did you mean "keywords"\? .*\[INPUT_INVALID\]$/m);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    // No paid call: plan may ask the free balance check.
    expect(operationRequests(sandbox)).toHaveLength(0);

    // No parameter column at all (and no defaults in the job): every row would be the same empty query.
    await ws.write('queries.csv', 'query,place\nnurse,berlin\n');
    const r = await inProcess(['plan', job, '--db', ws.db], {}, { cwd: ws.dir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('queries.csv: no column is named like a search parameter (keywords, location, timePosted, experienceLevels, jobTypes, workplaceTypes, companyIds); the header row (line 1) has: "query", "place"');
  }, CLI_TESTS_MS);
});

describe('a relative input.csv, from another directory', () => {
  it('is read from the current directory: run started elsewhere exits 2 saying where it looked, no stack trace', async () => {
    const { sandbox, ws } = await setUp();
    await ws.write('posts.csv', `post_url\n${postUrls(1)[0]}\n`);
    const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE });
    // Started in the folder above, as a cron line without `cd` would.
    const elsewhere = join(ws.dir, '..');
    const r = await inProcess(['run', job, '--db', ws.db], cliEnv(sandbox, TOKEN), { cwd: elsewhere });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(
      `netingest: posts.csv: cannot read input file: file not found (looked for ${join(elsewhere, 'posts.csv')}: ` +
        'a relative input.csv is read from the current directory) [INPUT_INVALID]\n',
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
    // No paid call: plan may ask the free balance check.
    expect(operationRequests(sandbox)).toHaveLength(0);
  }, CLI_TESTS_MS);
});

describe('an input file saved as UTF-16 (Excel "Unicode Text", Windows PowerShell `>`)', () => {
  it('run and plan exit 2 saying so, with or without a byte order mark; no NUL bytes in the message, no call', async () => {
    const { sandbox, ws } = await setUp();
    const text = `post_url\tnote\r\n${postUrls(1)[0]}\tx\r\n`;
    const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE });
    const utf16le = Buffer.from(text, 'utf16le');
    const utf16be = Buffer.from(utf16le).swap16();
    const files = {
      'little-endian with a byte order mark': Buffer.concat([Buffer.from([0xff, 0xfe]), utf16le]),
      'big-endian with a byte order mark': Buffer.concat([Buffer.from([0xfe, 0xff]), utf16be]),
      'little-endian without one': utf16le,
    };
    for (const [what, bytes] of Object.entries(files)) {
      await writeFile(join(ws.dir, 'posts.csv'), bytes);
      for (const command of ['run', 'plan']) {
        const r = await inProcess([command, job, '--db', ws.db], cliEnv(sandbox, TOKEN), { cwd: ws.dir });
        expect(r.code, `${what}, ${command}: ${r.stderr}`).toBe(2);
        expect(r.stderr).toContain('netingest: posts.csv: the file is UTF-16, not UTF-8: save it as UTF-8 (in Excel: "CSV UTF-8") [INPUT_INVALID]\n');
        expect(r.stderr).not.toContain('\0');
      }
    }
    // No paid call: plan may ask the free balance check.
    expect(operationRequests(sandbox)).toHaveLength(0);
  }, CLI_TESTS_MS);
});
