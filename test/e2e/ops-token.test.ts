import BetterSqlite3 from 'better-sqlite3';
import { registerRawBodyFunction } from '../../src/store/raw-body.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { runCli, startCli, type CliResult } from '../soak/cli-process.ts';
import { apiEnv, bytesOf, opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { inProcess, operationRequests } from '../support/run-helpers.ts';

// Distinctive values: any appearance in an output or a file is a leak, not a coincidence.
const TOKEN = 'ntk_Zq8wQ3-accepted-token-never-logged-5e1f';
const REFUSED = 'ntk_Zq8wQ3-refused-token-never-logged-9c2d';

let sandbox: Sandbox;
let ws: OpsWorkspace;
const outputs: Array<{ what: string; result: CliResult }> = [];

beforeAll(async () => {
  sandbox = await startSandbox({ tokens: { [TOKEN]: 1_000_000 }, latencyMs: [1, 5] });
  ws = await opsWorkspace({ posts: 12, companies: 3 });
});

afterAll(async () => {
  await sandbox?.stop();
  ws?.cleanup();
});

/** Runs a command in the workspace and keeps its output for the final grep. */
async function cli(what: string, args: string[], env: Record<string, string> = apiEnv(sandbox.url, TOKEN)): Promise<CliResult> {
  const result = await runCli(args, { cwd: ws.dir, env, timeoutMs: 60_000 });
  outputs.push({ what, result });
  return result;
}

/** A command through the CLI's code in this process (inProcess sets the folder and environment), its output kept. */
async function here(what: string, args: string[], env: Record<string, string> = apiEnv(sandbox.url, TOKEN)): Promise<CliResult> {
  const result = { ...(await inProcess(args, env, { cwd: ws.dir })), signal: null };
  outputs.push({ what, result });
  return result;
}

function leaks(text: string | Buffer): string[] {
  const found: string[] = [];
  for (const secret of [TOKEN, REFUSED]) {
    if (text.includes(secret)) found.push(secret === TOKEN ? 'the accepted token' : 'the refused token');
  }
  return found;
}

describe('no output and no file ever holds the token', () => {
  it('runs, reads, fails and is killed without writing the token anywhere', async () => {
    const db = join(ws.dir, 'data', 'ops.db');
    const tokenFile = join(ws.dir, 'token.txt');
    writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });

    expect((await cli('run', ['run', ws.postsJob, ws.lookalikesJob, '--db', db])).code).toBe(0);
    // The JSON logs and the token file: the same run's code, whose logger, summary and errors write only to the
    // streams it is given, through the CLI's code in this process (all a run's process prints is the run above's,
    // the refused token's and the killed run's).
    expect((await here('run --log-format json --json', ['run', ws.postsJob, '--db', db, '--refresh', '--log-format', 'json', '--json'])).code).toBe(0);
    const viaFile = await here('run --token-file', ['run', ws.postsJob, '--db', db, '--refresh', '--token-file', tokenFile], { NETINGEST_API_URL: sandbox.url });
    expect(viaFile.code, viaFile.stderr).toBe(0);

    // The reads: the bodies' text and a query from spawned CLIs (all their processes print), the others, which
    // print what is stored, through the CLI's code in this process, one after another (inProcess sets the
    // folder and environment).
    const spawnedReads = Promise.all([
      cli('export --sql raw_body', ['export', '--sql', 'SELECT raw_body(body, body_encoding) AS body FROM raw_responses', '--db', db]),
      cli('query', ['query', 'SELECT * FROM runs', '--db', db]),
    ]);
    const reads: CliResult[] = [];
    for (const [what, args] of [
      ['status', ['status', '--db', db]],
      ['status --json', ['status', '--db', db, '--json']],
      ['plan', ['plan', ws.postsJob, ws.lookalikesJob, '--db', db, '--json']],
      ['export', ['export', 'api_calls', '--db', db, '--format', 'jsonl']],
      ['export --sql', ['export', '--sql', 'SELECT * FROM raw_responses', '--db', db]],
    ] as const) {
      reads.push(await here(what, [...args]));
    }
    for (const r of [...reads, ...(await spawnedReads)]) expect(r.code, r.stderr).toBe(0);

    const refused = await cli('run with a refused token (401)', ['run', ws.postsJob, '--db', db, '--refresh'], apiEnv(sandbox.url, REFUSED));
    expect(refused.code).toBe(1);
    expect(refused.stdout + refused.stderr).toMatch(/token/i);
    // The two variables mixed up: the URL variable holds the token. The message must not echo it.
    const mixedUp = await cli('token in the URL variable', ['run', ws.postsJob, '--db', db], { NETINGEST_API_URL: TOKEN, NETINGEST_API_TOKEN: sandbox.url });
    expect(mixedUp.code).toBe(2);

    // A run SIGKILLed mid-way leaves its write-ahead log behind: that file is read too.
    const before = operationRequests(sandbox).length;
    const slow = startCli(['run', ws.postsJob, '--db', db, '--refresh', '--rate', '120', '--log-format', 'json'], { cwd: ws.dir, env: apiEnv(sandbox.url, TOKEN) });
    for (let i = 0; i < 400 && operationRequests(sandbox).length < before + 3; i++) await new Promise((r) => setTimeout(r, 25));
    slow.kill('SIGKILL');
    outputs.push({ what: 'run killed', result: await slow.result });
    expect(operationRequests(sandbox).length).toBeGreaterThanOrEqual(before + 3);

    const files = ['', '-wal', '-shm', '-journal'].map((suffix) => ({ file: `${db}${suffix}`, bytes: bytesOf(`${db}${suffix}`) }));
    expect(files[0]!.bytes.length).toBeGreaterThan(0);
    const found: string[] = [];
    for (const { what, result } of outputs) {
      for (const leak of leaks(result.stdout)) found.push(`${what}: stdout holds ${leak}`);
      for (const leak of leaks(result.stderr)) found.push(`${what}: stderr holds ${leak}`);
    }
    for (const { file, bytes } of files) for (const leak of leaks(bytes)) found.push(`${file} holds ${leak}`);
    // Bodies are stored gzipped: a scan of the file's bytes alone could not see a token inside one.
    const sqlite = new BetterSqlite3(db, { readonly: true });
    registerRawBodyFunction(sqlite);
    const bodies = sqlite.prepare('SELECT id, raw_body(body, body_encoding) AS text FROM raw_responses').all() as Array<{ id: number; text: string }>;
    sqlite.close();
    expect(bodies.length).toBeGreaterThan(0);
    for (const { id, text } of bodies) for (const leak of leaks(text)) found.push(`raw_responses ${id} holds ${leak}`);
    expect(found).toEqual([]);
    // The refused token did reach the API (so it was in hand while the run failed), and was not written down.
    expect(sandbox.requests.some((r) => r.status === 401)).toBe(true);
  }, 120_000);
});
