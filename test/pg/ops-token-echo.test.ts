/**
 * A service that echoes the token in every spelling (raw, percent-encoded, JSON-escaped with `\/` and
 * `\uXXXX` in either case, base64 of `Bearer <token>`) in its 200 bodies, its error bodies and a header:
 * the token is nowhere in the SQLite file or its WAL (nor in any value of any table on PostgreSQL), the run's
 * output and log, an export or a query.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.ts';
import { secretPattern } from '../../src/api/redact.ts';
import { FAST_RATE, FAST_RETRY, csv, inProcess, postUrls, runCli, useWorkspaces } from '../support/run-helpers.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'tk_live/9f8e+7d6c=5b4a/Zq';
const workspace = useWorkspaces();
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

/** A seeded generator, so that a failing case repeats. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomCase(rand: () => number, hex: string): string {
  return [...hex].map((d) => (rand() < 0.5 ? d.toUpperCase() : d)).join('');
}

/** The token as it may sit inside a JSON string: each character raw, `\uXXXX` (either case) or `\/`. */
function jsonSpelling(rand: () => number): string {
  return [...TOKEN]
    .map((c) => {
      const r = rand();
      if (r < 0.4) return '\\u' + randomCase(rand, c.charCodeAt(0).toString(16).padStart(4, '0'));
      if (c === '/' && r < 0.8) return '\\/';
      return c;
    })
    .join('');
}

/** The token percent-encoded, each character or only some, in either case. */
function percentSpelling(rand: () => number): string {
  return [...TOKEN].map((c) => (rand() < 0.6 ? '%' + randomCase(rand, c.charCodeAt(0).toString(16)) : c)).join('');
}

const BEARER_B64 = Buffer.from(`Bearer ${TOKEN}`).toString('base64');

/** A stand-in in front of the sandbox that echoes the token into what it answers. */
async function echoingProxy(upstream: string): Promise<{ url: string; sent: string[] }> {
  const rand = rng(22);
  const sent: string[] = [];
  const failedOnce = new Set<string>();
  const server: Server = createServer((req, res) => {
    req.resume();
    void (async () => {
      const json = jsonSpelling(rand);
      const pct = percentSpelling(rand);
      sent.push(json, pct);
      const headers = { 'content-type': 'application/json', 'x-echo': `${TOKEN} ${pct} ${BEARER_B64}` };
      // Every task's first call fails with the token in the error body (a 500, retried); one task's every call
      // is a 400, whose excerpt is kept as the task's error. The others' retry gets the real answer.
      const refused = req.url!.includes('author-0_');
      if (refused || !failedOnce.has(req.url!)) {
        failedOnce.add(req.url!);
        res.writeHead(refused ? 400 : 500, headers);
        res.end(`{"message":"bad token ${json}","raw":"${TOKEN}","auth":"${BEARER_B64}","url":"/x?t=${pct}"}`);
        return;
      }
      const answer = await fetch(upstream + req.url, { headers: { authorization: req.headers.authorization! } });
      let body = await answer.text();
      if (answer.status === 200) {
        body = body
          .replace('{', `{"echo":"${json}","echo_url":"https://x.example/cb?token=${pct}","echo_auth":"${BEARER_B64}",`)
          .replace('"headline":"', `"headline":"${jsonSpelling(rand)} `);
      }
      res.writeHead(answer.status, headers);
      res.end(body);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sent };
}

/** Every way the token could show in `text`: raw, each spelling the proxy sent, base64, any other spelling. */
function leaks(text: string, sent: string[]): string[] {
  const found = [TOKEN, BEARER_B64, ...sent].filter((form) => text.includes(form));
  const any = secretPattern([TOKEN])!;
  any.lastIndex = 0;
  if (any.test(text)) found.push('a spelling of the token');
  return found;
}

forEachEngine('a token echoed in every spelling', (engine) => {
  it('is in neither the database file, its WAL, the output and log of run, an export nor a query', async () => {
    const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 100_000 }, notFoundRate: 0 });
    closers.push(() => sandbox.stop());
    const proxy = await echoingProxy(sandbox.url);
    const ws = await workspace();
    const dataset = await engine.open(ws.dir);
    const db = dataset.locator;
    await ws.write('posts.csv', csv(['post_url'], postUrls(12).map((u) => [u])));
    await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
    const env = { NETINGEST_API_URL: proxy.url, NETINGEST_API_TOKEN: TOKEN };

    const ran = await runCli(['run', 'posts.json', '--db', db, '--json'], { cwd: ws.dir, env });
    expect(ran.code, ran.stderr).toBe(5);
    expect(proxy.sent.length).toBeGreaterThanOrEqual(24);
    const outputs = [ran.stdout, ran.stderr];
    // One reader is a spawned CLI (all its process prints); the others, which only print what is stored, are the
    // CLI's code in this process, one after another (inProcess sets the working folder and environment).
    // Bodies are kept gzipped: raw_body() shows their text, where a token would be.
    const spawned = runCli(['export', '--sql', 'SELECT *, raw_body(body, body_encoding) AS body_text FROM raw_responses', '--db', db, '--format', 'jsonl'], { cwd: ws.dir, env });
    const reads = [
      ['export', 'posts', '--db', db],
      ['export', '--sql', 'SELECT * FROM api_calls', '--db', db],
      ['query', 'SELECT * FROM posts', '--db', db],
      ['query', 'SELECT * FROM tasks', '--db', db, '--format', 'csv'],
      ['query', 'SELECT raw_body(body, body_encoding) AS body FROM raw_responses', '--db', db, '--format', 'csv'],
    ];
    const results = [];
    for (const args of reads) results.push(await inProcess(args, env, { cwd: ws.dir }));
    for (const out of [await spawned, ...results]) {
      expect(out.code, out.stderr).toBe(0);
      outputs.push(out.stdout, out.stderr);
    }
    // The echo did reach the stored bodies and exports, redacted: the test looks where the token would be.
    expect(outputs.join('\n')).toMatch(/headline\\?":\\?"\[REDACTED\] /);
    expect(outputs.join('\n')).toMatch(/bad token \[REDACTED\]/);
    for (const [i, text] of outputs.entries()) expect(leaks(text, proxy.sent), `output ${i}`).toEqual([]);
    const stored = await dataset.everything();
    // The scan sees the stored echo, redacted (on PostgreSQL the bodies themselves: they are text there).
    expect(stored.map((s) => s.text).join('\n')).toMatch(engine.name === 'postgres' ? /"headline":"\[REDACTED\] / : /\[REDACTED\]/);
    for (const { where, text } of stored) expect(leaks(text, proxy.sent), where).toEqual([]);
  }, 60_000);
});
