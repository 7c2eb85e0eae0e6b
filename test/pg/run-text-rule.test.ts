/**
 * Issue #28 item 1: text no engine stores as sent (a NUL, a lone surrogate: valid JSON) is stored alike on both,
 * by one rule applied before either writes (NUL removed, a lone surrogate as U+FFFD, counted as drift); the body
 * is kept as received. On PostgreSQL such an answer used to fail every run (paid, nothing stored, exit 1), and so
 * did a count past a 32-bit integer or a URL past any page address's length, now NULL on both.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { copyDataset } from '../../src/store/copy-dataset.ts';
import { storableJsonText, storableString, storableValue } from '../../src/operations/storable-text.ts';
import { postService } from '../support/db-fixtures.ts';
import { closeEngines, forEachEngine, POSTGRES } from './engines.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';

const TOKEN = 'text-rule-token-0001';
const POSTS = 3;
let ws: OpsWorkspace;
const startFake = useFakeServices();

beforeEach(async () => {
  ws = await opsWorkspace({ posts: POSTS, retries: 1 });
});
afterEach(() => ws.cleanup());

/** Post answers holding a NUL and halves of an emoji in a text column and in a JSON one (hashtags), as JSON escapes. */
async function startHostileService(sent: string[]): Promise<string> {
  return startFake(postService((base) => {
    const body = {
      ...base,
      author: { ...base.author, name: 'Ada\udc00' },
      post: { ...base.post, text_content: 'a\u0000b \ud83d end', hashtags: ['#x\u0000y', '\ud83d'] },
    };
    sent.push(JSON.stringify(body));
    return body;
  }));
}

describe('the text rule', () => {
  it('removes NUL, replaces lone surrogates, keeps pairs, and returns the same value when nothing changes', () => {
    expect(storableString('a\u0000b\ud83d\ude00\ud83d')).toEqual({ text: 'ab\ud83d\ude00\ufffd', fix: 'NUL removed, lone surrogate replaced by U+FFFD' });
    const clean = { a: ['x', { b: 'y 🎉' }] };
    expect(storableValue(clean)).toBe(clean);
    const fixes: string[] = [];
    expect(storableValue({ a: [{ 'k\u0000': '\udc00' }] }, (path, _parent, fix) => fixes.push(`${path}: ${fix}`))).toEqual({ a: [{ k: '\ufffd' }] });
    expect(fixes).toEqual(['a[].k: NUL removed, lone surrogate replaced by U+FFFD']);
    expect(storableJsonText('["\\u0000a","\\ud83d\\ude00"]')).toBe('["a","\ud83d\ude00"]');
    expect(storableJsonText('["\\\\u0000"]')).toBe('["\\\\u0000"]');
  });

  it('drops a member whose name, fixed, is another member\'s: it does not take that member\'s place', () => {
    // A hostile answer named a member 'u\u0000rl' beside each record's url: fixed to 'url', it overwrote them all, and
    // 60 lookalike companies were stored as one.
    const fixes: string[] = [];
    const record = { 'u\u0000rl': 'https://network.com/company/collide', url: 'https://network.com/company/real', 'na\u0000me': 'A', 'nam\u0000e': 'B' };
    expect(storableValue(record, (path, _parent, fix) => fixes.push(`${path}: ${fix}`))).toEqual({ url: 'https://network.com/company/real', name: 'A' });
    expect(storableValue({ url: 'https://network.com/company/real', 'u\u0000rl': 'x' })).toEqual({ url: 'https://network.com/company/real' });
    // Each path once a record: a member counted twice read as 60 of 30 records.
    expect(fixes).toEqual(['url: NUL removed', 'name: NUL removed']);
  });
});

forEachEngine('answers holding text no engine stores as sent', (engine) => {
  it('are stored by the one rule, counted as drift, their bodies kept as received', async () => {
    const sent: string[] = [];
    const baseUrl = await startHostileService(sent);
    const db = await engine.open(ws.dir);
    const job = await loadJob(ws.postsJob, { cwd: ws.dir });
    const summary = await runJobs({ dbPath: db.locator, jobs: [job], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('completed');
    expect(summary.jobs[0]).toMatchObject({ done: POSTS, failed: 0 });
    const posts = await db.rows<{ text: string; hashtags: string; author: string }>('SELECT text_content AS text, hashtags, author_name AS author FROM posts');
    expect(posts).toHaveLength(POSTS);
    for (const p of posts) {
      expect(p.text).toBe('ab \ufffd end');
      expect(JSON.parse(p.hashtags)).toEqual(['#xy', '\ufffd']);
      expect(p.author).toBe('Ada\ufffd');
    }
    const bodies = await db.rows<{ body: string }>('SELECT raw_body(body, body_encoding) AS body FROM raw_responses WHERE error_code IS NULL ORDER BY id');
    expect(bodies.map((b) => b.body).sort()).toEqual([...sent].sort());
    const drift = await db.rows<{ path: string; count: number }>(`SELECT path, count FROM answer_drift WHERE kind = 'text' ORDER BY path`);
    expect(drift).toEqual([
      { path: 'author.name', count: POSTS },
      { path: 'post.hashtags[]', count: 2 * POSTS },
      { path: 'post.text_content', count: POSTS },
    ]);
    expect(summary.drift.map((d) => d.message)).toContainEqual(expect.stringMatching(/post\.text_content: text no database stores as sent/));
  }, 60_000);
});

/** Post answers whose engagement counts are past 2^31 - 1 (what a PostgreSQL `integer` holds). */
async function startLargeCounts(): Promise<string> {
  return startFake(postService((base) => ({ ...base, engagement: { reactions: 3_000_000_000, comments_count: 2 ** 40 } })));
}

/**
 * Counts past a 32-bit integer (a garbled or hostile service's): PostgreSQL's integer column refused them, so the run
 * stopped with its answers paid and lost, night after night, while SQLite stored them.
 */
forEachEngine('answers holding counts past a 32-bit integer', (engine) => {
  it('are read as NULL and counted as drift alike on both engines, and the run completes', async () => {
    const baseUrl = await startLargeCounts();
    const db = await engine.open(ws.dir);
    const job = await loadJob(ws.postsJob, { cwd: ws.dir });
    const summary = await runJobs({ dbPath: db.locator, jobs: [job], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('completed');
    expect(summary.jobs[0]).toMatchObject({ done: POSTS, failed: 0 });
    const posts = await db.rows<{ reactions: number | null; comments: number | null }>('SELECT reactions, comments_count AS comments FROM posts');
    expect(posts).toEqual(Array.from({ length: POSTS }, () => ({ reactions: null, comments: null })));
    expect(summary.drift.map((d) => d.message)).toContainEqual(expect.stringMatching(/engagement\.reactions: of another type in 3\/3 \(number 3000000000\), stored as NULL/));
  }, 60_000);
});

/**
 * An author URL longer than any page address, its characters random (a garbled or hostile service's): stored as sent,
 * PostgreSQL's index on posts.author_url refused it (~2,700 bytes at most) and with it the group, paid.
 */
forEachEngine('answers holding a URL longer than any page address', (engine) => {
  it('store it as NULL alike on both engines, and the run completes', async () => {
    const baseUrl = await startFake(postService((base) => ({ ...base, author: { ...base.author, network_url: `https://www.network.com/in/${randomBytes(2_500).toString('hex')}` } })));
    const db = await engine.open(ws.dir);
    const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.postsJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('completed');
    expect(await db.rows('SELECT author_url FROM posts')).toEqual(Array.from({ length: POSTS }, () => ({ author_url: null })));
  }, 60_000);
});

describe.skipIf(!pgClusterUrl)(`copy of a SQLite dataset written before the rule${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  afterAll(closeEngines);
  it('carries its NULs and lone surrogates over by the same rule', async () => {
    const baseUrl = await startHostileService([]);
    const file = join(ws.dir, 'old.db');
    const job = await loadJob(ws.postsJob, { cwd: ws.dir });
    await runJobs({ dbPath: file, jobs: [job], api: { baseUrl, token: TOKEN } });
    // What an earlier netingest stored: the text as the answer sent it.
    const lite = new BetterSqlite3(file);
    lite.prepare(`UPDATE posts SET text_content = ?, hashtags = ?`).run('a\u0000b', '["#x\\u0000y","\\ud83d"]');
    lite.close();
    const target = await POSTGRES.open(ws.dir);
    await copyDataset(file, target.locator);
    const posts = await target.rows<{ text: string; hashtags: string }>('SELECT text_content AS text, hashtags FROM posts');
    expect(posts).toHaveLength(POSTS);
    for (const p of posts) expect([p.text, JSON.parse(p.hashtags)]).toEqual(['ab', ['#xy', '\ufffd']]);
  }, 60_000);

  it('carries a count past 32 bits and an author URL past what an index holds over as NULL, as an answer is stored now', async () => {
    const file = join(ws.dir, 'old.db');
    await runJobs({ dbPath: file, jobs: [await loadJob(ws.postsJob, { cwd: ws.dir })], api: { baseUrl: await startHostileService([]), token: TOKEN } });
    const lite = new BetterSqlite3(file);
    lite.prepare('UPDATE posts SET reactions = ?, author_url = ?').run(3_000_000_000, `https://www.network.com/in/${randomBytes(1_500).toString('hex')}`);
    lite.close();
    const target = await POSTGRES.open(ws.dir);
    await copyDataset(file, target.locator);
    expect(await target.rows('SELECT reactions, author_url FROM posts')).toEqual(Array.from({ length: POSTS }, () => ({ reactions: null, author_url: null })));
  }, 60_000);
});
