/**
 * Garbled or hostile answers past what an engine or the run could take, paid and lost night after night:
 * - text past what PostgreSQL's btree holds (~2,700 bytes) in an indexed column. The 2,048-character rule counted
 *   characters: 700 CJK characters are 2,100 bytes as sent and 6,300 once percent-encoded in a canonical URL, and a
 *   name or an industry had no rule at all. PostgreSQL refused the whole group while SQLite stored them; now NULL on both;
 * - a PostId of 1,500 CJK characters for a URL naming no activity: it keyed the post, refused by PostgreSQL's primary key;
 *   now no identity, set aside;
 * - a member named by 1,500 CJK characters holding a NUL: its text fix's path was refused by PostgreSQL's index on
 *   answer_drift, so the run ended failed after storing its answers; now the path's start and an ellipsis;
 * - a body nested 20,000 levels deep. The text rule's walk overflowed the stack: the run ended `failed` (INTERNAL)
 *   after paying, with none of its calls recorded. Now such a body is unusable (SCHEMA), kept, and the run goes on.
 */
import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { company, postService, similarResponse } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'overlong-index-token-0001';
const COMPANIES = 2;
let ws: OpsWorkspace;
const startFake = useFakeServices();

beforeEach(async () => {
  ws = await opsWorkspace({ companies: COMPANIES, posts: 2, retries: 1 });
});
afterEach(() => ws.cleanup());

/** Random CJK characters, three UTF-8 bytes each and incompressible: what no index entry of PostgreSQL's holds. */
const cjk = (n: number) => Array.from({ length: n }, () => String.fromCodePoint(0x4e00 + randomInt(20_000))).join('');

forEachEngine('an answer with text past what an index holds', (engine) => {
  it('stores a post whose author URL is 700 CJK characters, in a URL or as text, with author_url NULL', async () => {
    const urls = [`https://www.network.com/in/${cjk(700)}`, cjk(700)];
    const baseUrl = await startFake(postService((base, call) => ({ ...base, author: { ...base.author, network_url: urls[call % 2] } })));
    const db = await engine.open(ws.dir);
    const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.postsJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('completed');
    expect(await db.rows('SELECT author_url FROM posts')).toEqual([{ author_url: null }, { author_url: null }]);
  }, 60_000);

  it('sets aside a post asked by a URL naming no activity whose answer names it by 1,500 CJK characters', async () => {
    writeFileSync(join(ws.dir, 'posts.csv'), 'post_url\nhttps://www.network.com/pulse/first-article\nhttps://www.network.com/pulse/second-article\n');
    const baseUrl = await startFake(postService((base) => ({ ...base, PostId: cjk(1_500) })));
    const db = await engine.open(ws.dir);
    const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.postsJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('completed');
    expect(await db.rows('SELECT count(*) AS n FROM posts')).toEqual([{ n: 0 }]);
    const anomalies = await db.rows('SELECT kind, reason FROM answer_anomalies');
    expect(anomalies).toEqual(Array.from({ length: 2 }, () => ({ kind: 'no_identity', reason: 'a PostId past 2048 bytes, and the URL asked for names no activity' })));
  }, 60_000);

  it('says a text fix under a member named by 1,500 CJK characters by the start of its path, and completes', async () => {
    const baseUrl = await startFake(postService((base) => ({ ...base, post: { ...base.post, [cjk(1_500)]: 'a\u0000b' } })));
    const db = await engine.open(ws.dir);
    const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.postsJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('completed');
    const paths = await db.rows<{ path: string }>("SELECT path FROM answer_drift WHERE kind = 'text'");
    expect(paths).toHaveLength(2);
    for (const { path } of paths) expect(path).toMatch(/^post\.[\u4e00-\u9fff]{195}…$/u);
    for (const d of summary.drift) expect(d.message.length).toBeLessThan(300);
  }, 60_000);

  it('stores a company whose name, industry and country are 1,000 CJK characters, those NULL and the rest kept', async () => {
    const long = cjk(1_000);
    const lookalike = company(1, { url: 'https://www.network.com/company/long-text', universalName: long, industries: [long, 'Software'] });
    lookalike.locations = { headquarter: { ...lookalike.locations!.headquarter!, country: long }, other: [] };
    const baseUrl = await startFake((req, res) => {
      if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(similarResponse([lookalike], 1, 10)));
    });
    const db = await engine.open(ws.dir);
    const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.lookalikesJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('completed');
    expect(await db.rows("SELECT name, universal_name FROM companies WHERE url LIKE '%long-text'")).toEqual([{ name: 'Acme 1 Société 🚀', universal_name: null }]);
    expect(await db.rows('SELECT value FROM company_industries ORDER BY position')).toEqual([{ value: null }, { value: 'Software' }]);
    expect(await db.rows('SELECT country, city FROM company_locations')).toEqual([{ country: null, city: 'münchen' }]);
  }, 60_000);
});

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
    const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.lookalikesJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
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
