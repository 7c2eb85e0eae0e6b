/**
 * `enrich` on PostgreSQL: for the same data (the example jobs run against the sandbox, then `netingest copy`), each
 * job's enriched lead list is byte-identical to the one written from SQLite, per input and per result, CSV and
 * JSON Lines: the same lookups (each page's latest answer), the same statuses from the ledger. Input rows are looked
 * up in chunks (ENRICH_CHUNK_ROWS): across chunk boundaries each row gets its own lead's answer, in a few round trips.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { ENRICH_CHUNK_ROWS } from '../../src/export/enrich.ts';
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

  it('gives each row of a long input its own lead\'s answer across chunks (duplicates, invalid rows between), in few round trips', async () => {
    // The example leads repeated past three chunks, each lead twice in a row now and then and an invalid row every 7th.
    const leads = (await readFile(join(ROOT, 'data/leads.csv'), 'utf8')).trim().split('\n');
    const lines = [leads[0]!];
    for (let i = 0; lines.length <= 3 * ENRICH_CHUNK_ROWS + 40; i++) {
      const lead = leads[1 + (i % (leads.length - 1))]!;
      lines.push(i % 7 === 3 ? `not a url ${i},x` : lead);
      if (i % 5 === 0 || lines.length === ENRICH_CHUNK_ROWS + 1) lines.push(lead);
    }
    const dir = join(data.ws.dir, 'long');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'leads.csv'), lines.join('\n') + '\n');
    // Named as the example job, so its tasks and results are this job's.
    const job = JSON.parse(await readFile(join(ROOT, 'jobs', 'lookalikes.json'), 'utf8')) as { input: { csv: string } };
    await writeFile(join(dir, 'lookalikes.json'), JSON.stringify({ ...job, input: { ...job.input, csv: join(dir, 'leads.csv') } }));
    const counting = await countingProxy(data.url);
    try {
      for (const extra of [['--changes-since', '2000-01-01'], ['--rows', 'per-result']]) {
        const each = await enrichAs(join(ROOT, 'jobs', 'lookalikes.json'), data.file, extra, 'each.csv');
        const lite = await enrichAs(join(dir, 'lookalikes.json'), data.file, extra, 'long-lite.csv');
        counting.sends = 0;
        const onPg = await enrichAs(join(dir, 'lookalikes.json'), counting.url, extra, 'long-pg.csv');
        expect(onPg, extra.join(' ')).toBe(lite);
        // Row by row, three statements or more a valid lead; in chunks, a few rounds each.
        expect(counting.sends, extra.join(' ')).toBeLessThan(lines.length / 10);
        // Each output row is its lead's, as the short list (one chunk) gives it: status, error, key and results.
        const long = parse(lite, { from_line: 2 }) as string[][];
        expect(new Set(long.map((r) => r[2])).size, extra.join(' ')).toBe(lines.length - 1);
        const got = byLead(long);
        for (const [key, [rows]] of byLead(parse(each, { from_line: 2 }) as string[][])) {
          expect(got.get(key)!.length, key).toBeGreaterThan(1);
          for (const occurrence of got.get(key)!) expect(occurrence, key).toEqual(rows);
        }
        const added = long.filter((r) => r[0]!.startsWith('not a url'));
        expect(added.length, extra.join(' ')).toBe(lines.filter((l) => l.startsWith('not a url')).length);
        expect(new Set(added.map((r) => r[3]))).toEqual(new Set(['invalid_input']));
      }
    } finally {
      await counting.close();
    }
  });

  const enrichAs = async (job: string, db: string, extra: string[], name: string) => {
    const out = join(data.ws.dir, name);
    const cli = await inProcess(['enrich', job, '--db', db, '--out', out, ...extra]);
    expect(cli.code, cli.stderr).toBe(0);
    return readFile(out, 'utf8');
  };
});

/** Per input key (netingest_input_key), each input row's output rows from netingest_status on, in input order. */
function byLead(rows: string[][]): Map<string, string[][]> {
  const lines = new Map<string, Map<string, string[]>>();
  for (const row of rows) {
    if (row[5] === '') continue;
    const ofKey = lines.get(row[5]!) ?? lines.set(row[5]!, new Map()).get(row[5]!)!;
    ofKey.set(row[2]!, [...(ofKey.get(row[2]!) ?? []), row.slice(3).join('|')]);
  }
  return new Map([...lines].map(([key, ofKey]) => [key, [...ofKey.values()]]));
}

/** A TCP proxy to the server of `url` counting what clients send: a batch of statements goes in one send. */
async function countingProxy(url: string): Promise<{ url: string; sends: number; close(): Promise<void> }> {
  const target = new URL(url);
  const sockets = new Set<net.Socket>();
  const proxy = { url: '', sends: 0, close: () => new Promise<void>((resolve) => (sockets.forEach((s) => s.destroy()), server.close(() => resolve()))) };
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
    }
    client.on('data', (chunk) => (proxy.sends++, upstream.write(chunk)));
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const via = new URL(url);
  via.port = String((server.address() as net.AddressInfo).port);
  proxy.url = via.toString();
  return proxy;
}
