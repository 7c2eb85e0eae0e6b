/**
 * Every invalid row, on demand (issue #20): `plan` says how many invalid rows it did not show, and `plan` and
 * `run` write all of them with `--invalid-out`, with the input's columns, line and reason, as real CLI processes.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { FAST_RATE, FAST_RETRY, cliEnv, companyUrls, inProcess, operationRequests, runCli, useWorkspaces } from '../support/run-helpers.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

const TOKEN = 'invalid-out-token';
const newWorkspace = useWorkspaces();
const newSandbox = useSandboxes();

/** A `;`-separated lead list with a BOM, as Excel saves it: `good` valid rows then `bad` invalid ones (lines 2…). */
function leads(good: number, bad: number): string {
  const rows = ['company_url;owner;zip'];
  for (const url of companyUrls(good)) rows.push(`${url};Müller;01234`);
  for (let i = 0; i < bad; i++) rows.push(`not a url ${i};owner ${i};0${i}`);
  return '\ufeff' + rows.join('\r\n') + '\r\n';
}

function readOut(file: string): { bom: boolean; header: string[]; rows: string[][] } {
  const bytes = readFileSync(file);
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  const [header, ...rows] = parse(bytes, { bom: true, delimiter: ';' }) as string[][];
  return { bom, header: header!, rows };
}

describe('plan --invalid-out', () => {
  it('says how many invalid rows are not shown, and writes them all with their columns, line and reason', async () => {
    const ws = await newWorkspace();
    await ws.write('leads.csv', leads(3, 25));
    const file = await ws.job('leads', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' } });

    const plain = await inProcess(['plan', file, '--db', ws.db], {}, { cwd: ws.dir });
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout.match(/^ {2}invalid: /gm)).toHaveLength(20);
    expect(plain.stdout).toContain('  ... 5 more invalid rows not shown: `--invalid-out FILE` writes them all');

    const result = await inProcess(['plan', file, '--db', ws.db, '--invalid-out', 'bad-rows.csv'], {}, { cwd: ws.dir });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`wrote 25 invalid rows of leads to bad-rows.csv`);
    const out = readOut(join(ws.dir, 'bad-rows.csv'));
    expect(out.bom).toBe(true); // as the input
    expect(out.header).toEqual(['company_url', 'owner', 'zip', 'netingest_line', 'netingest_reason']);
    expect(out.rows).toHaveLength(25);
    expect(out.rows[0]).toEqual(['not a url 0', 'owner 0', '00', '5', expect.stringMatching(/^company_url "not a url 0": /)]);
    expect(out.rows[24]!.slice(0, 4)).toEqual(['not a url 24', 'owner 24', '024', '29']);
    expect(existsSync(ws.db)).toBe(false); // plan never creates the database
  });

  it('reads a row with one field too many, with a warning; writes a row with too few with its own values', async () => {
    const ws = await newWorkspace();
    const [a, b, c] = companyUrls(3);
    await ws.write('leads.csv', ['company_url;owner;zip', `${a};jane;01`, `${b};omar;02;EXTRA`, `${c};li`, ''].join('\n'));
    const file = await ws.job('leads', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' } });
    const result = await inProcess(['plan', file, '--db', ws.db, '--invalid-out', 'bad-rows.csv'], {}, { cwd: ws.dir });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('input: 2 tasks, 1 invalid row');
    expect(result.stdout).toContain("warning: 1 row with values past the header's columns (first on line 3): read, those values left out");
    const out = readOut(join(ws.dir, 'bad-rows.csv'));
    // csv-parse reads an unquoted empty field as ''; the row's missing zip is written as an empty field.
    expect(out.rows).toEqual([[c, 'li', '', '4', 'malformed CSV row: expected 3 fields as in the header row, found 2']]);
  });

  it('with several jobs, writes one file per job, named after it', async () => {
    const ws = await newWorkspace();
    await ws.write('leads.csv', leads(1, 2));
    const a = await ws.job('a', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' } });
    const b = await ws.job('b', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' } });
    const result = await inProcess(['plan', a, b, '--db', ws.db, '--invalid-out', 'bad.csv'], {}, { cwd: ws.dir });
    expect(result.code, result.stderr).toBe(0);
    expect(readOut(join(ws.dir, 'bad.a.csv')).rows).toHaveLength(2);
    expect(readOut(join(ws.dir, 'bad.b.csv')).rows).toHaveLength(2);
    expect(existsSync(join(ws.dir, 'bad.csv'))).toBe(false);
  });
});

describe('run --invalid-out', () => {
  it('writes every invalid row of the run, as plan does', async () => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    await ws.write('leads.csv', leads(2, 22));
    const file = await ws.job('leads', {
      operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, rate: FAST_RATE, retry: FAST_RETRY,
    });
    const result = await runCli(['run', file, '--db', ws.db, '--invalid-out', 'bad-rows.csv'], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    expect(result.code, result.stderr).toBe(0);
    const out = readOut(join(ws.dir, 'bad-rows.csv'));
    expect(out.rows.map((r) => r[3])).toEqual(Array.from({ length: 22 }, (_, i) => String(i + 4)));
    expect(result.stderr).toContain('wrote 22 invalid rows of leads to bad-rows.csv');
  }, 60_000);

  it('refuses its own input as the file before the first call, not after the paid run', async () => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    const input = leads(2, 3);
    await ws.write('leads.csv', input);
    // Absolute: the CLI in this process resolves the input against this process's folder.
    const file = await ws.job('leads', {
      operation: 'similar-companies', input: { csv: join(ws.dir, 'leads.csv'), column: 'company_url' }, rate: FAST_RATE, retry: FAST_RETRY,
    });
    const result = await inProcess(['run', file, '--db', ws.db, '--invalid-out', join(ws.dir, 'leads.csv')], cliEnv(sandbox, TOKEN));
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`--invalid-out ${join(ws.dir, 'leads.csv')} is the job's input CSV`);
    expect(operationRequests(sandbox)).toHaveLength(0);
    expect(readFileSync(join(ws.dir, 'leads.csv'), 'utf8')).toBe(input);
  });

  it('refuses a folder that does not exist, or a folder as the file, before the first call', async () => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    await ws.write('leads.csv', leads(2, 3));
    const file = await ws.job('leads', {
      operation: 'similar-companies', input: { csv: join(ws.dir, 'leads.csv'), column: 'company_url' }, rate: FAST_RATE, retry: FAST_RETRY,
    });
    const missing = join(ws.dir, 'no-such-folder', 'bad.csv');
    const result = await inProcess(['run', file, '--db', ws.db, '--invalid-out', missing], cliEnv(sandbox, TOKEN));
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(`${missing}: cannot write the output file: folder ${join(ws.dir, 'no-such-folder')} does not exist`);
    const folder = await inProcess(['run', file, '--db', ws.db, '--invalid-out', ws.dir], cliEnv(sandbox, TOKEN));
    expect(folder.code, folder.stderr).toBe(2);
    expect(folder.stderr).toContain('it is a folder');
    expect(operationRequests(sandbox)).toHaveLength(0);
  });

  it('reads a row with one field too many, and says so in its log', async () => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    const [a, b] = companyUrls(2);
    await ws.write('leads.csv', ['company_url;owner', `${a};jane`, `${b};omar;EXTRA`, ''].join('\n'));
    const file = await ws.job('leads', {
      operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, pages: 1, rate: FAST_RATE, retry: FAST_RETRY,
    });
    const result = await runCli(['run', file, '--db', ws.db, '--log-format', 'json'], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    expect(result.code, result.stderr).toBe(0);
    const warning = result.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((l) => /past the header's columns/.test(l.msg));
    expect(warning).toMatchObject({ level: 'warn', job: 'leads', file: 'leads.csv', rows: 1, first_line: 3 });
    expect(result.stdout).toMatch(/leads \(similar-companies\): 2 tasks, .*2 done.*0 invalid rows/);
  }, 60_000);
});

