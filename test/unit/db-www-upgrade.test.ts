import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { DatabaseNeedsMigrationError } from '../../src/store/errors.ts';
import { upgradedUrl } from '../../src/store/upgrades/www-canonical-urls.ts';
import { buildPreviousReleaseDb, T0, T1, T2 } from './db-previous-release.ts';

let dir: string;
const opened: Database[] = [];
const NOW = new Date().toISOString();
const WWW = 'https://www.network.com';

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-www-upgrade-'));
});
afterEach(() => {
  for (const d of opened.splice(0)) d.close();
  rmSync(dir, { recursive: true, force: true });
});

function open(file: string, options?: Parameters<typeof openDatabase>[1]): Database {
  const d = openDatabase(file, options);
  opened.push(d);
  return d;
}
const all = (d: Database, sql: string, ...params: unknown[]) => d.sqlite.prepare(sql).all(...params) as Array<Record<string, unknown>>;

/** Every text value of every user table, to look for a URL left in the old form. */
function everyText(d: Database): string[] {
  const tables = d.sqlite.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_\\_%' ESCAPE '\\'`).pluck().all() as string[];
  const out: string[] = [];
  for (const t of tables) {
    for (const row of all(d, `SELECT * FROM ${t}`)) for (const v of Object.values(row)) if (typeof v === 'string') out.push(v);
  }
  return out;
}

describe('opening a database of the previous release', () => {
  it('rewrites every stored URL to the www. form, merging editions of one page, with nothing lost', () => {
    const file = join(dir, 'old.db');
    buildPreviousReleaseDb(file, dir, NOW);
    const d = open(file);

    // No old-form network URL anywhere (a key, a request, an archived request, a link, a record).
    const stale = everyText(d).filter((v) => /https:\/\/(?:(?:de|m)\.)?network\.com[/ "]/.test(v) || v.includes('://network.com'));
    expect(stale).toEqual([]);
    expect(d.sqlite.pragma('foreign_key_check')).toEqual([]);
    expect(d.sqlite.prepare(`SELECT value FROM netingest_meta WHERE key = 'canonical_urls'`).pluck().get()).toBe('www');

    // Tasks: the three spellings of acme are one task, the answered one, holding every call and archived answer.
    const tasks = all(d, `SELECT id, job, input_key, request_json, status FROM tasks ORDER BY id`);
    expect(tasks.map((t) => [t.job, t.input_key, t.status])).toEqual([
      ['leads', `${WWW}/company/acme`, 'done'],
      ['leads', `${WWW}/company/beta`, 'done'],
      ['leads', 'https://www.acme.org/company/about', 'done'],
      ['posts', `${WWW}/posts/jane_x-activity-7100000000000000001-ab`, 'done'],
      ['search', 'q_0123456789abcdef', 'done'],
    ]);
    // The request text is the one a run plans now (JSON.stringify of the same members in the same order).
    expect(tasks[0]!.request_json).toBe(JSON.stringify({ url: `${WWW}/company/acme`, account: {}, page: 1, num: 10 }));
    expect(tasks[3]!.request_json).toBe(JSON.stringify({ url: `${WWW}/posts/jane_x-activity-7100000000000000001-ab` }));
    expect(tasks[4]!.request_json).toBe(JSON.stringify({ keywords: 'rust', start: 0 }));
    const acmeTask = tasks[0]!.id;
    expect(all(d, `SELECT task_id, status FROM api_calls ORDER BY id`)).toEqual([
      { task_id: acmeTask, status: 200 },
      { task_id: acmeTask, status: 500 },
    ]);
    const raws = all(d, `SELECT task_id, request_key, request_json, error_code FROM raw_responses ORDER BY id`);
    expect(raws.map((r) => [r.task_id, r.request_key, r.error_code])).toEqual([
      [acmeTask, `${WWW}/company/acme f_none page=1 num=10`, null],
      [acmeTask, `${WWW}/company/acme f_none page=1 num=10`, 'SCHEMA'],
      [tasks[3]!.id, `${WWW}/posts/jane_x-activity-7100000000000000001-ab`, null],
    ]);
    expect(JSON.parse(raws[1]!.request_json as string)).toEqual({
      operation: 'similar-companies', referenceUrl: `${WWW}/company/acme`, filterKey: 'f_none', filters: {}, page: 1, num: 10,
    });

    // Companies: acme once, its freshest record (the de. one) with its own child sets, first seen at the earliest.
    expect(all(d, `SELECT url, name, first_seen_at, updated_at FROM companies ORDER BY url`)).toEqual([
      { url: 'https://www.acme.org/company/about', name: 'Elsewhere', first_seen_at: T0, updated_at: T0 },
      { url: `${WWW}/company/acme`, name: 'Acme GmbH', first_seen_at: T0, updated_at: T2 },
      { url: `${WWW}/company/beta`, name: 'Beta', first_seen_at: T0, updated_at: T0 },
    ]);
    expect(all(d, `SELECT company_url, position, value FROM company_industries ORDER BY company_url, position`)).toEqual([
      { company_url: `${WWW}/company/acme`, position: 1, value: 'Robotics' },
      { company_url: `${WWW}/company/acme`, position: 2, value: 'Automation' },
      { company_url: `${WWW}/company/beta`, position: 1, value: 'Logistics' },
    ]);
    expect(all(d, `SELECT company_url, city FROM company_locations`)).toEqual([{ company_url: `${WWW}/company/acme`, city: 'Berlin' }]);
    // One link per (reference, filters, company): the latest, spanning both sightings.
    expect(all(d, `SELECT reference_url, company_url, rank, first_seen_at, last_seen_at FROM similar_companies ORDER BY reference_url`)).toEqual([
      { reference_url: `${WWW}/company/acme`, company_url: `${WWW}/company/beta`, rank: 2, first_seen_at: T0, last_seen_at: T2 },
      { reference_url: `${WWW}/company/beta`, company_url: `${WWW}/company/acme`, rank: 1, first_seen_at: T0, last_seen_at: T0 },
    ]);

    // Posts keep their id; URLs take the new form; media URLs (not the network's pages) are as they were.
    expect(all(d, `SELECT post_id, url, author_url FROM posts`)).toEqual([
      { post_id: 'activity-7100000000000000001', url: `${WWW}/posts/jane_x-activity-7100000000000000001-ab`, author_url: `${WWW}/in/jane` },
    ]);
    expect(all(d, `SELECT url FROM post_media`)).toEqual([{ url: 'https://media.example/1.jpg' }]);

    // Jobs: the two editions of job 1 are one job (the later record), one place in the search.
    expect(all(d, `SELECT url, title, company_link, first_seen_at FROM jobs ORDER BY url`)).toEqual([
      { url: `${WWW}/jobs/view/1`, title: 'Rust-Entwickler', company_link: `${WWW}/company/acme`, first_seen_at: T0 },
      { url: `${WWW}/jobs/view/2`, title: 'Go dev', company_link: 'https://careers.example.org/acme', first_seen_at: T0 },
    ]);
    expect(all(d, `SELECT job_url, position, first_seen_at, last_seen_at FROM job_search_results ORDER BY job_url`)).toEqual([
      { job_url: `${WWW}/jobs/view/1`, position: 3, first_seen_at: T0, last_seen_at: T1 },
      { job_url: `${WWW}/jobs/view/2`, position: 2, first_seen_at: T0, last_seen_at: T1 },
    ]);
    // Raw input cells are what the file held: not rewritten.
    expect(all(d, `SELECT value FROM invalid_inputs`)).toEqual([{ value: 'acme' }]);
  });

  it('runs once: a reopen leaves rows alone', () => {
    const file = join(dir, 'old.db');
    buildPreviousReleaseDb(file, dir, NOW);
    open(file).close();
    opened.pop();
    const d = open(file);
    // A row written the old way after the upgrade (as by hand) is not touched by a second open.
    d.sqlite.prepare(`INSERT INTO companies (url, name, first_seen_at, updated_at) VALUES ('https://network.com/company/zeta', 'Z', ?, ?)`).run(T0, T0);
    d.close();
    opened.pop();
    const again = open(file);
    expect(again.sqlite.prepare(`SELECT count(*) FROM companies WHERE url = 'https://network.com/company/zeta'`).pluck().get()).toBe(1);
  });

  it('is done by a read-only open only through upgradeOlderSchema', () => {
    const file = join(dir, 'old.db');
    buildPreviousReleaseDb(file, dir, NOW);
    expect(() => open(file, { readonly: true })).toThrow(DatabaseNeedsMigrationError);
    const d = open(file, { readonly: true, upgradeOlderSchema: true });
    expect(d.sqlite.prepare(`SELECT url FROM companies WHERE name = 'Acme GmbH'`).pluck().get()).toBe(`${WWW}/company/acme`);
  });

  it('uses the configured host, and gives a bare brand domain www. even before its host is configured', () => {
    expect(upgradedUrl('https://de.brand.example/company/x', 'brand.example')).toBe('https://www.brand.example/company/x');
    expect(upgradedUrl('https://brand.co.uk/company/x', 'brand.co.uk')).toBe('https://www.brand.co.uk/company/x');
    // The live brand stored under the default host setting: moved the way its runs will key it.
    expect(upgradedUrl('https://brand.example/company/x', 'network.com')).toBe('https://www.brand.example/company/x');
    expect(upgradedUrl('https://m.brand.example/posts/a-activity-1', 'network.com')).toBe('https://www.brand.example/posts/a-activity-1');
    // Not a network page, or not a bare domain: as it was.
    for (const v of ['https://example.org/about', 'https://careers.example.org/company/x', 'https://network.com:8443/company/x', 'acme', null, 7]) {
      expect(upgradedUrl(v, 'network.com')).toBe(v);
    }
  });
});
