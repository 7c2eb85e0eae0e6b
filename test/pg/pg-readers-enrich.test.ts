/**
 * `enrich` on PostgreSQL: for the same data (the example jobs run against the sandbox, then `netingest copy`), each
 * job's enriched lead list is byte-identical to the one written from SQLite, per input and per result, CSV and
 * JSON Lines: the same lookups (each page's latest answer), the same statuses from the ledger.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, inProcess } from '../support/run-helpers.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { makeReadDataset, type ReadDataset } from './read-dataset.ts';

const JOBS = ['lookalikes.json', 'job-search.json', 'post-engagement.ts'];

describe.skipIf(!pgClusterUrl)(`enrich on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let data: ReadDataset;
  beforeAll(async () => {
    data = await makeReadDataset('enrich', JOBS);
  }, 60_000);
  afterAll(async () => {
    await data?.cleanup();
  });

  const enrich = async (db: string, job: string, extra: string[], name: string) => {
    const out = join(data.ws.dir, name);
    const cli = await inProcess(['enrich', join(ROOT, 'jobs', job), '--db', db, '--out', out, ...extra]);
    expect(cli.code, cli.stderr).toBe(0);
    return { text: await readFile(out, 'utf8'), said: cli.stderr.replace(out, '<out>') };
  };

  it('writes the same file from both engines for every example job, per input and per result', async () => {
    for (const job of JOBS) {
      for (const extra of [[], ['--rows', 'per-result', '--format', 'jsonl']]) {
        const lite = await enrich(data.file, job, extra, 'lite.out');
        const onPg = await enrich(data.url, job, extra, 'pg.out');
        expect(lite.text.split('\n').length, job).toBeGreaterThan(3);
        expect(lite.said, job).toMatch(/\d+ ok/);
        expect(onPg.said, `${job} ${extra.join(' ')}`).toBe(lite.said);
        expect(onPg.text, `${job} ${extra.join(' ')}`).toBe(lite.text);
      }
    }
  });
});
