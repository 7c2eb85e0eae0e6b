import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { ingestInTransaction } from '../support/store-helpers.ts';
import { isoPostDate } from '../../src/store/ingest/post-date.ts';
import { countryName } from '../../src/operations/stored-values.ts';
import { MIGRATIONS_FOLDER } from '../../src/store/migration-state.ts';
import { company, postRequest, postResponse, similarRequest, similarResponse } from '../support/db-fixtures.ts';

const T1 = '2026-11-25T10:00:00.000Z';
/** Raw timestamps with the day each must give (null: ambiguous, malformed or no such day). */
const DATES: Array<[unknown, string | null]> = [
  ['22-11-2026', '2026-11-22'], // only DD-MM fits
  ['11-22-2026', '2026-11-22'], // only MM-DD fits
  ['05-05-2026', '2026-05-05'], // the same either way
  ['03-04-2026', null], // ambiguous, and no order given
  ['13-00-2026', null],
  ['13-13-2026', null],
  ['31-02-2026', null], // no such day
  ['29-02-2024', '2024-02-29'],
  ['29-02-2026', null],
  ['2026-11-03', '2026-11-03'],
  ['2026-11-03T08:15:00Z', '2026-11-03'],
  ['2026-13-03', null],
  ['3-4-2026', null],
  ['yesterday', null],
  ['', null],
  [null, null],
  [20261103, null],
];

let dir: string;
let database: Database | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-analyst-'));
});
afterEach(() => {
  database?.close();
  database = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe('isoPostDate', () => {
  it.each(DATES)('%j -> %j', (raw, iso) => {
    expect(isoPostDate(raw)).toBe(iso);
  });
});

describe("isoPostDate with the dataset's order", () => {
  it('reads an ambiguous day in the order given, and nothing else differently', () => {
    expect(isoPostDate('03-04-2026', 'dmy')).toBe('2026-04-03');
    expect(isoPostDate('03-04-2026', 'mdy')).toBe('2026-03-04');
    expect(isoPostDate('22-11-2026', 'mdy')).toBe('2026-11-22');
    expect(isoPostDate('00-04-2026', 'dmy')).toBeNull();
  });
});

describe('countryName', () => {
  it('names two-letter codes in lower case and keeps names as sent, lower-cased', () => {
    expect(countryName('de')).toBe('germany');
    expect(countryName('GB')).toBe('united kingdom');
    expect(countryName(' fr ')).toBe('france');
    expect(countryName('germany')).toBe('germany');
    expect(countryName('United States')).toBe('united states');
    expect(countryName('zz')).toBe('zz'); // ICU's "Unknown Region" is no country
    expect(countryName('')).toBeNull();
    expect(countryName(null)).toBeNull();
    expect(countryName(49)).toBeNull();
  });
});

describe('stored beside the raw values', () => {
  it('a post gets posted_on, an address country_name', () => {
    database = openDatabase(join(dir, 'n.db'));
    ingestInTransaction(database, postRequest, postResponse(), T1);
    const hq = { ...company(1).locations.headquarter, country: 'de' };
    ingestInTransaction(database, similarRequest(), similarResponse([company(1, { locations: { headquarter: hq, other: [] } })]), T1);
    expect(database.sqlite.prepare('SELECT posted_raw, posted_on FROM posts').get()).toEqual({ posted_raw: '22-11-2026', posted_on: '2026-11-22' });
    expect(database.sqlite.prepare('SELECT country, country_name FROM company_locations').get()).toEqual({ country: 'de', country_name: 'germany' });
  });
});

describe('the day/month order learned from the posts', () => {
  const post = (n: number, timestamp: string) =>
    ingestInTransaction(database!, { ...postRequest, postUrl: `https://www.network.com/posts/p${n}` }, postResponse({ PostId: `activity-${n}`, post: { ...postResponse().post, timestamp } }), T1);
  const postedOn = () => database!.sqlite.prepare('SELECT post_id, posted_on FROM posts ORDER BY post_id').all();

  it('fills the ambiguous days once one post proves an order, and empties them if another proves the other', () => {
    database = openDatabase(join(dir, 'n.db'));
    post(1, '03-04-2026');
    expect(postedOn()).toEqual([{ post_id: 'activity-1', posted_on: null }]);
    post(2, '22-11-2026');
    post(3, '05-06-2026');
    expect(postedOn()).toEqual([
      { post_id: 'activity-1', posted_on: '2026-04-03' },
      { post_id: 'activity-2', posted_on: '2026-11-22' },
      { post_id: 'activity-3', posted_on: '2026-06-05' },
    ]);
    database.close();
    // A new normalizer (the next run) learns the order from what is stored.
    database = openDatabase(join(dir, 'n.db'));
    post(4, '01-02-2026');
    expect((postedOn() as Array<{ posted_on: string }>)[3]!.posted_on).toBe('2026-02-01');
    post(5, '11-30-2026'); // MM-DD: the posts now prove both orders
    expect(postedOn()).toEqual([
      { post_id: 'activity-1', posted_on: null },
      { post_id: 'activity-2', posted_on: '2026-11-22' },
      { post_id: 'activity-3', posted_on: null },
      { post_id: 'activity-4', posted_on: null },
      { post_id: 'activity-5', posted_on: '2026-11-30' },
    ]);
  });
});

describe('a database an older netingest wrote', () => {
  /** The migrations up to 0005, the last one without these columns. */
  function olderMigrations(): string {
    const folder = join(dir, 'older-migrations');
    mkdirSync(join(folder, 'meta'), { recursive: true });
    const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: Array<{ tag: string; idx: number }> };
    journal.entries = journal.entries.filter((e) => e.idx <= 5);
    for (const { tag } of journal.entries) copyFileSync(join(MIGRATIONS_FOLDER, `${tag}.sql`), join(folder, `${tag}.sql`));
    writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify(journal));
    return folder;
  }

  it('is migrated with posted_on and country_name filled by the same rules as new rows', () => {
    const file = join(dir, 'older.db');
    const old = openDatabase(file, { migrationsFolder: olderMigrations() });
    const insertPost = old.sqlite.prepare(`INSERT INTO posts (post_id, url, posted_raw, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?)`);
    const strings = DATES.filter(([raw]) => typeof raw === 'string' || raw === null) as Array<[string | null, string | null]>;
    strings.forEach(([raw], i) => insertPost.run(`activity-${i}`, `https://www.network.com/posts/p${i}`, raw, T1, T1));
    old.sqlite.prepare(`INSERT INTO companies (url, first_seen_at, updated_at) VALUES ('https://www.network.com/company/a', ?, ?)`).run(T1, T1);
    const countries = ['de', 'GB', 'germany', 'zz', '', null, 'ci'];
    const insertLocation = old.sqlite.prepare(`INSERT INTO company_locations (company_url, position, is_headquarter, country) VALUES ('https://www.network.com/company/a', ?, 0, ?)`);
    countries.forEach((c, i) => insertLocation.run(i + 1, c));
    old.close();

    database = openDatabase(file);
    const posted = database.sqlite.prepare('SELECT posted_raw AS raw, posted_on AS iso FROM posts ORDER BY rowid').all() as Array<{ raw: string | null; iso: string | null }>;
    expect(posted).toHaveLength(strings.length);
    for (const { raw, iso } of posted) expect(iso, String(raw)).toBe(isoPostDate(raw));
    const named = database.sqlite.prepare('SELECT country, country_name AS name FROM company_locations ORDER BY position').all() as Array<{ country: string | null; name: string | null }>;
    for (const { country, name } of named) expect(name, String(country)).toBe(countryName(country));
    expect(named.map((r) => r.name)).toEqual(['germany', 'united kingdom', 'germany', 'zz', null, null, 'côte d’ivoire']);
  });

  it('fills the ambiguous days in the order the other posts prove', () => {
    const file = join(dir, 'older.db');
    const old = openDatabase(file, { migrationsFolder: olderMigrations() });
    const insertPost = old.sqlite.prepare(`INSERT INTO posts (post_id, url, posted_raw, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?)`);
    ['03-04-2026', '22-11-2026', '12-01-2025'].forEach((raw, i) => insertPost.run(`activity-${i}`, `https://www.network.com/posts/p${i}`, raw, T1, T1));
    old.close();
    database = openDatabase(file);
    const days = database.sqlite.prepare('SELECT posted_on FROM posts ORDER BY post_id').pluck().all();
    expect(days).toEqual(['2026-04-03', '2026-11-22', '2025-01-12']);
  });
});
