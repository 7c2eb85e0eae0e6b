/**
 * A 429's Retry-After holds every worker of the API URL on PostgreSQL (a placeholder slot in rate_slots), the next
 * run too: that run says it waits, for how long and why (the service asked to slow down at a time), not sit silent.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/runner/logger.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { postResponse } from '../support/db-fixtures.ts';
import { FAST_RETRY, csv, postUrls, useWorkspaces } from '../support/run-helpers.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { waitFor } from './coordination-fixtures.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

const TOKEN = 'pause-wait-token-5e1c';
/**
 * A wait gets its own line over 5 s (the progress log's interval); the test's runs say one over LONG_WAIT_MS, so its
 * Retry-After need not be 14 s. Over it, with room for the first run's stop and the second's start before its first
 * call waits: 9 s (3 s was used up once at load 14, and 5 s once in CI on a quiet machine: the wait went unsaid).
 */
const LONG_WAIT_MS = 1_000;
const RETRY_AFTER_S = 10;
const newWorkspace = useWorkspaces();
const startFake = useFakeServices();

describe.skipIf(!pgClusterUrl)(`a run held by an earlier run's 429 on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('says it waits, how long, until when and since when the service asked to slow down; its calls still wait', { timeout: 60_000 }, async () => {
    // The first call is throttled; every later one answered.
    const paidAt: number[] = [];
    const url = await startFake((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      if (req.url?.startsWith('/v1/api/auth')) return void res.writeHead(404).end('{}');
      paidAt.push(Date.now());
      if (paidAt.length === 1) return void res.writeHead(429, { 'retry-after': String(RETRY_AFTER_S) }).end('{"message":"slow down"}');
      const body = { ...postResponse(), total_credits: 100, credits_used: paidAt.length, credits_remaining: 100 - paidAt.length };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    const db = await newMigratedPgDatabase('pause_wait');
    const ws = await newWorkspace();
    await ws.write('posts.csv', csv(['post_url'], postUrls(2).map((u) => [u])));
    const file = await ws.job('posts', {
      operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: { requestsPerMinute: 600_000, concurrency: 1 }, retry: FAST_RETRY,
    });
    const jobs = await ws.load(file);
    const options = { dbPath: db, jobs, api: { baseUrl: url, token: TOKEN }, requestTimeoutMs: 5000, sharedRateLongWaitMs: LONG_WAIT_MS };

    // The first run meets the 429, writes the pause, and is stopped (as at the end of a cron slot).
    const pool = new pg.Pool({ connectionString: db, max: 1 });
    const stopFirst = new AbortController();
    const silent = createLogger({ stream: new PassThrough(), secrets: [TOKEN] });
    const first = runJobs({ ...options, signal: stopFirst.signal, logger: silent });
    try {
      // The pause's placeholder slot, seconds ahead.
      const held = `SELECT 1 FROM rate_slots WHERE started_at > clock_timestamp() + interval '1 second'`;
      await waitFor(async () => ((await pool.query(held)).rowCount ?? 0) > 0, 10_000, 'the pause');
    } finally {
      await pool.end();
    }
    const askedAt = paidAt[0]!;
    stopFirst.abort();
    await first;

    const log = new PassThrough();
    let logged = '';
    log.on('data', (c: Buffer) => (logged += c.toString()));
    const second = await runJobs({ ...options, logger: createLogger({ stream: log, secrets: [TOKEN] }) });
    expect(second.status).toBe('completed');
    // Honouring the Retry-After across runs is intended: the second run's calls came after it.
    expect(paidAt[1]! - askedAt).toBeGreaterThanOrEqual(RETRY_AFTER_S * 1000 - 100);
    const line = logged.split('\n').find((l) => l.includes('waiting: the API asked to slow down (429)'));
    expect(line, logged).toBeDefined();
    const field = (name: string) => new RegExp(`${name}=(\\S+)`).exec(line!)?.[1] ?? '';
    expect(Math.abs(Date.parse(field('asked_at')) - askedAt)).toBeLessThan(1_000);
    expect(Math.abs(Date.parse(field('until')) - (askedAt + RETRY_AFTER_S * 1000))).toBeLessThan(1_000);
    expect(Number(field('wait_s'))).toBeGreaterThanOrEqual(LONG_WAIT_MS / 1000);
    expect(Number(field('wait_s'))).toBeLessThanOrEqual(RETRY_AFTER_S);
    // One line for the one 429, however many calls it held.
    expect(logged.split('waiting: the API asked').length - 1).toBe(1);
  });
});
