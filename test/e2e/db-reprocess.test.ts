import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { createIngestor, NORMALIZED_TABLES } from '../../src/store/ingest/index.ts';
import { saveRawResponse } from '../../src/store/raw-archive.ts';
import type { IngestRequest, IngestResponseFor } from '../../src/store/ingest-request.ts';
import { validateResponse } from '../support/store-helpers.ts';
import { parseJsonBody } from '../../src/api/json-body.ts';
import { reprocess } from '../../src/runner/reprocess.ts';
import { reprocessCommand } from '../../src/cli/commands/reprocess.ts';
import { main } from '../../src/cli/main.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { company, job, jobsRequest, jobsResponse, postRequest, postResponse, similarRequest, similarResponse } from '../support/db-fixtures.ts';

let dir: string;
let database: Database;
let sandbox: Sandbox;
const TOKEN = 'db-reprocess-token';

beforeAll(async () => {
  sandbox = await startSandbox({ tokens: { [TOKEN]: 1_000_000 }, notFoundRate: 0, logRequests: false });
});
afterAll(async () => {
  await sandbox.stop();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-db-reprocess-'));
  database = openDatabase(join(dir, 'netingest.db'));
});
afterEach(() => {
  database.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Writes a response the way the runner does: normalized rows and the raw body in one transaction. */
function store<R extends IngestRequest>(req: R, body: string, receivedAt: string): void {
  const ingestor = createIngestor(database);
  const save = saveRawResponse(database);
  database.sqlite.transaction(() => {
    const parsed = validateResponse(req.operation, parseJsonBody(body)) as IngestResponseFor<R>;
    ingestor.ingest(req, parsed, receivedAt);
    save({ operation: req.operation, request: req, body, receivedAt, runId: 1, taskId: null });
  })();
}

function dataset(): Record<string, unknown[]> {
  return Object.fromEntries(
    NORMALIZED_TABLES.map((t) => [t, database.sqlite.prepare(`SELECT * FROM ${t} ORDER BY rowid`).all()]),
  );
}

async function sandboxBody(path: string, init: RequestInit = {}): Promise<string> {
  const res = await fetch(`${sandbox.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TOKEN}`, accept: 'application/json', 'content-type': 'application/json' },
  });
  expect(res.status).toBe(200);
  return res.text();
}

describe('reprocess', () => {
  it('rebuilds exactly the same dataset from raw_responses (hand-built and sandbox bodies)', async () => {
    // Hand-built bodies over two days, with a company seen again with other child sets.
    store(similarRequest(1, 2), JSON.stringify(similarResponse([company(1), company(2)])), '2026-11-20T10:00:00.000Z');
    store(postRequest, JSON.stringify(postResponse()), '2026-11-20T10:00:01.000Z');
    store(jobsRequest(0), JSON.stringify(jobsResponse([job(1), job(2)])), '2026-11-20T10:00:02.000Z');
    const changed = company(1, { industries: ['Robotics', 'AI'], specialities: null, hashtags: ['#x'] });
    store(similarRequest(2, 2), JSON.stringify(similarResponse([changed, company(3)], 2)), '2026-11-21T09:00:00.000Z');
    store(jobsRequest(10), JSON.stringify(jobsResponse([job(2), job(3)])), '2026-11-21T09:00:01.000Z');

    // Real bodies from the sandbox, over HTTP, byte for byte as received.
    const simBody = await sandboxBody('/v1/api/similar-companies', {
      method: 'POST',
      body: JSON.stringify({ url: 'network.com/company/sandbox-co', account: {}, page: 1, num: 5 }),
    });
    store({ operation: 'similar-companies', referenceUrl: 'https://network.com/company/sandbox-co', filterKey: 'none', filters: {}, page: 1, num: 5 }, simBody, '2026-11-21T09:00:02.000Z');
    const postUrl = 'https://network.com/posts/someone_topic-activity-7000000000000000001-xYz';
    const postBody = await sandboxBody(`/v1/api/post-details?url=${encodeURIComponent(postUrl)}`);
    store({ operation: 'post-details', postUrl }, postBody, '2026-11-21T09:00:03.000Z');
    const jobsBody = await sandboxBody('/v1/api/search-jobs?keywords=data%20engineer&location=berlin&start=0');
    store({ operation: 'search-jobs', searchKey: 'sandbox-search', query: { keywords: 'data engineer', location: 'berlin' }, start: 0 }, jobsBody, '2026-11-21T09:00:04.000Z');

    const before = dataset();
    expect(before['companies']!.length).toBeGreaterThan(3);
    expect(before['jobs']!.length).toBeGreaterThan(3);
    expect(before['posts']!.length).toBe(2);

    const report = reprocess(database, { batchSize: 3 });
    expect(report).toMatchObject({ responses: 8, replayed: 8, invalid: 0, rejected: [] });
    expect(report.rowsDeleted).toBe(Object.values(before).reduce((n, rows) => n + rows.length, 0));
    expect(dataset()).toEqual(before);
    // And again: reprocess of a reprocessed database is a no-op too.
    reprocess(database);
    expect(dataset()).toEqual(before);
  });

  it('replays a body that starts with a byte-order mark, as the client accepted it', () => {
    // The client and the writer strip a leading BOM before parsing; reprocess read it as "not JSON" and the
    // rebuild silently dropped the rows of an answer that was paid for and valid.
    store(postRequest, '\ufeff' + JSON.stringify(postResponse()), '2026-11-20T10:00:00.000Z');
    const before = dataset();
    expect(before['posts']).toHaveLength(1);
    expect(reprocess(database)).toMatchObject({ responses: 1, replayed: 1, invalid: 0 });
    expect(dataset()).toEqual(before);
  });

  it('counts and reports bodies that no longer validate, without failing the rebuild', () => {
    store(postRequest, JSON.stringify(postResponse()), '2026-11-20T10:00:00.000Z');
    const save = saveRawResponse(database);
    // A member of another type is drift, read as NULL; a body with nothing of a post cannot be read at all.
    const { PostId: _id, author: _a, post: _p, engagement: _e, ...broken } = postResponse();
    database.sqlite.transaction(() => {
      save({ operation: 'post-details', request: postRequest, body: JSON.stringify(broken), receivedAt: '2026-11-21T00:00:00.000Z', runId: 2, taskId: null });
      save({ operation: 'post-details', request: postRequest, body: '{"success": tru', receivedAt: '2026-11-21T00:00:01.000Z', runId: 2, taskId: null });
    })();
    const before = dataset();
    const report = reprocess(database);
    expect(report.responses).toBe(3);
    expect(report.replayed).toBe(1);
    expect(report.invalid).toBe(2);
    expect(report.rejected[0]).toMatchObject({ operation: 'post-details', reason: expect.stringMatching(/no longer valid: .*none of PostId, author, post, engagement/) });
    expect(report.rejected[1]).toMatchObject({ reason: expect.stringMatching(/^not JSON/) });
    expect(dataset()).toEqual(before);
  });

  it('the report counts row writes, not rows: a row stored by two responses counts twice, and says so', async () => {
    // One post with two media rows, answered twice: 3 rows in the tables, 6 row writes by the replay.
    store(postRequest, JSON.stringify(postResponse()), '2026-11-20T10:00:00.000Z');
    store(postRequest, JSON.stringify(postResponse()), '2026-11-21T10:00:00.000Z');
    const held = Object.values(dataset()).reduce((n, rows) => n + rows.length, 0);
    expect(held).toBe(3);
    const out = new PassThrough();
    let stdout = '';
    out.on('data', (c: Buffer) => (stdout += c.toString()));
    expect(await main(['reprocess', '--db', database.file], { stdout: out, stderr: new PassThrough() })).toBe(0);
    expect(stdout).toContain('Normalized rows: 3 deleted, then 6 row writes (inserts and updates: a row stored again counts again).');
  });

  it('the reprocess command rebuilds the file at --db and prints its report', async () => {
    store(postRequest, JSON.stringify(postResponse()), '2026-11-20T10:00:00.000Z');
    const before = dataset();
    database.sqlite.prepare('UPDATE posts SET text_content = ?').run('tampered');
    const out = new PassThrough();
    const err = new PassThrough();
    let stdout = '';
    out.on('data', (c: Buffer) => (stdout += c.toString()));
    const code = await reprocessCommand.run({ db: database.file, json: true } as never, { stdout: out, stderr: err });
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ responses: 1, replayed: 1, invalid: 0 });
    expect(dataset()).toEqual(before);
    expect(database.sqlite.prepare('SELECT count(*) FROM run_lock').pluck().get()).toBe(0);
  });
});
