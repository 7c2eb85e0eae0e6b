/**
 * Answers whose Content-Type declares a charset other than UTF-8 (`iso-8859-1`, `latin1`, `windows-1252`: one
 * encoding in the WHATWG Encoding standard, whose 0x80 is `€`), through a real run: the text is read in that charset,
 * stored, kept in raw_responses as read, and `reprocess` rebuilds the same rows from it. Every body used to be read
 * as UTF-8, so a Latin-1 "Müller" was stored as "M\uFFFDller" and kept so. A label the standard does not know, or a
 * body labelled Latin-1 whose bytes are UTF-8 (a server's default label on UTF-8 text), is read as UTF-8.
 */
import type { RequestListener } from 'node:http';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { reprocessDatabase } from '../../src/runner/reprocess.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { postResponse } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'charset-token-7a21c0';
let ws: OpsWorkspace;
const startFake = useFakeServices();

beforeEach(async () => {
  ws = await opsWorkspace({ posts: 2, retries: 1 });
});
afterEach(() => ws.cleanup());

const AUTHOR = 'Jürgen Müller';
const HEADLINE = 'Geschäftsführer, Köln';
/** `\x80`: the byte 0x80, `€` in windows-1252, which the WHATWG standard reads for every Latin-1 label. */
const TEXT = 'Grüße aus Köln: 5 \x80 für alle';
const STORED = { author: AUTHOR, headline: HEADLINE, text: 'Grüße aus Köln: 5 € für alle' };

/** A post-details service answering each call with `encode` of the JSON body, declared as `contentType`. */
function service(contentType: string, encode: (json: string) => Buffer): RequestListener {
  let used = 0;
  return (req, res) => {
    if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
    used += 1;
    const base = postResponse({ total_credits: 100, credits_used: used, credits_remaining: 100 - used } as never);
    const body = { ...base, author: { ...base.author, name: AUTHOR, headline: HEADLINE }, post: { ...base.post, text_content: TEXT } };
    res.writeHead(200, { 'content-type': contentType }).end(encode(JSON.stringify(body)));
  };
}

const latin1 = (json: string) => Buffer.from(json, 'latin1');
// The same text as UTF-8: `\x80` is the C1 control there, which the text rule stores as is; `€` is what a server sends.
const utf8 = (json: string) => Buffer.from(json.replace('\x80', '€'), 'utf8');

const ROWS = 'SELECT author_name AS author, author_headline AS headline, text_content AS text FROM posts ORDER BY post_id';

forEachEngine('an answer in the charset its Content-Type declares', (engine) => {
  it.each([
    ['application/json; charset=iso-8859-1', 'Latin-1', latin1],
    ['application/json;charset=latin1', 'Latin-1', latin1],
    ['application/json; charset="Windows-1252"', 'Latin-1', latin1],
    // Labels that are not what the bytes are: UTF-8 text labelled Latin-1, and a label no standard knows.
    ['application/json; charset=iso-8859-1', 'UTF-8', utf8],
    ['application/json; charset=x-no-such-charset', 'UTF-8', utf8],
  ])('%s, %s bytes: stored as sent, kept so in raw_responses, and reprocess gives the same rows', async (contentType, _bytes, encode) => {
    const baseUrl = await startFake(service(contentType, encode));
    const db = await engine.open(ws.dir);
    const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.postsJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('completed');
    expect(summary.drift).toEqual([]);
    expect(await db.rows(ROWS)).toEqual([STORED, STORED]);
    const kept = await db.rows<{ body: string }>('SELECT raw_body(body, body_encoding) AS body FROM raw_responses');
    expect(kept).toHaveLength(2);
    for (const { body } of kept) expect(JSON.parse(body)).toMatchObject({ author: { name: AUTHOR }, post: { text_content: STORED.text } });

    const report = await reprocessDatabase(db.locator);
    expect(report).toMatchObject({ responses: 2, replayed: 2, invalid: 0 });
    expect(await db.rows(ROWS)).toEqual([STORED, STORED]);
  }, 60_000);
});
