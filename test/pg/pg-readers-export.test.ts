/**
 * `export` on PostgreSQL: the same dataset (a sandbox run, then `netingest copy`) exported from both engines gives
 * the same bytes where the types allow: timestamps as SQLite's ISO text, smallint 0/1, as-given JSON values as
 * those values. Where they do not (jsonb keeps no key order; PostgreSQL has no rowid, so tables keyed by text come
 * in key order; raw bodies are text, not gzip) the values are compared instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcess } from '../support/run-helpers.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { makeReadDataset, type ReadDataset } from './read-dataset.ts';
import { DATABASE_URL_ENV } from '../../src/store/locator.ts';

/** A JSON Lines export's rows, JSON-text values parsed and every object's keys sorted (jsonb keeps no key order), sorted. */
function jsonlValues(text: string): string[] {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, canonical(v)]));
  };
  return text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .map((row) => Object.entries(row).map(([k, v]) => [k, typeof v === 'string' && /^[[{]/.test(v) ? canonical(JSON.parse(v)) : v]))
    .map((row) => JSON.stringify(row))
    .sort();
}

describe.skipIf(!pgClusterUrl)(`export on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let data: ReadDataset;
  const both = async (args: string[]) => {
    const lite = await inProcess([...args, '--db', data.file]);
    const pg = await inProcess([...args, '--db', data.url]);
    expect(pg.stderr).toBe(lite.stderr);
    expect(pg.code).toBe(0);
    expect(lite.code).toBe(0);
    return { lite: lite.stdout, pg: pg.stdout };
  };
  beforeAll(async () => {
    data = await makeReadDataset('export');
  }, 60_000);
  afterAll(async () => {
    await data?.cleanup();
  });

  it('tables keyed by id, and any table in key order, are byte-identical in CSV and JSON Lines', async () => {
    for (const format of ['csv', 'jsonl']) {
      for (const table of ['runs', 'api_calls', 'invalid_inputs']) {
        const { lite, pg } = await both(['export', table, '--format', format]);
        expect(lite.trim().split('\n').length, table).toBeGreaterThan(format === 'csv' ? 1 : 0);
        expect(pg, `${table} ${format}`).toBe(lite);
      }
      // Timestamps, smallint 0/1, as-given values (a number, a string, NULL), text with newlines and quotes. JSON
      // Lines prints each value's type with its text: every statement is compared in it; CSV prints those values
      // with the formatter both engines share, compared on the companies (text with newlines and quotes, numbers,
      // NULLs, timestamps), not again on the others (one statement child fewer each on SQLite: ~0.2 s of CPU).
      for (const sql of [
        'SELECT url, name, description, phone, followers, cover, tagline, founded_year, first_seen_at, updated_at FROM companies ORDER BY url',
        ...(format === 'jsonl' ? [
          'SELECT * FROM company_locations ORDER BY company_url, position',
          'SELECT * FROM jobs ORDER BY url',
          'SELECT id, job, status, retryable, attempts, created_at, completed_at, run_id FROM tasks ORDER BY id',
        ] : []),
      ]) {
        const { lite, pg } = await both(['export', '--sql', sql, '--format', format]);
        expect(lite.split('\n').length, sql).toBeGreaterThan(2);
        expect(pg, `${sql} ${format}`).toBe(lite);
      }
    }
  });

  it('tables with JSON objects or text keys hold the same values', async () => {
    for (const table of ['tasks', 'companies', 'similar_companies', 'jobs', 'job_search_results']) {
      const { lite, pg } = await both(['export', table, '--format', 'jsonl']);
      expect(jsonlValues(pg), table).toEqual(jsonlValues(lite));
      expect(pg, table).not.toBe(lite);
    }
  });

  it('--since filters the same rows; NETINGEST_DATABASE_URL selects PostgreSQL when --db is not given', async () => {
    const ats = (await inProcess(['query', 'SELECT updated_at FROM companies ORDER BY updated_at', '--db', data.file, '--format', 'csv'])).stdout.trim().split('\n').slice(1);
    const middle = ats[Math.floor(ats.length / 2)]!;
    const sql = `SELECT url FROM companies WHERE updated_at >= '${middle}' ORDER BY url`;
    const lite = await inProcess(['export', '--sql', sql, '--db', data.file]);
    const pg = await inProcess(['export', 'companies', '--since', middle, '--format', 'jsonl'], { [DATABASE_URL_ENV]: data.url });
    expect(pg.code).toBe(0);
    const urls = pg.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { url: string }).url);
    expect(urls.length).toBeGreaterThan(0);
    expect(urls.length).toBeLessThan(ats.length);
    expect(['url', ...urls].join('\n') + '\n').toBe(lite.stdout);
  });

  it('--out writes the file whole', async () => {
    const out = `${data.ws.dir}/runs.csv`;
    const pg = await inProcess(['export', 'runs', '--db', data.url, '--out', out]);
    expect(pg.code).toBe(0);
    expect(pg.stderr).toMatch(/exported 1 row to .*runs\.csv/);
    const { readFile } = await import('node:fs/promises');
    expect(await readFile(out, 'utf8')).toBe((await inProcess(['export', 'runs', '--db', data.file])).stdout);
  });
});
