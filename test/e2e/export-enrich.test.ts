import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { parse } from 'csv-parse/sync';
import type BetterSqlite3 from 'better-sqlite3';
import { openDatabase } from '../../src/store/open.ts';
import { enrichJob } from '../../src/export/enrich.ts';
import { POST_BY_ID_SQL, POST_BY_URL_SQL } from '../../src/operations/post-details.ts';
import { postIdOfUrl } from '../../src/urls/canonical.ts';
import { filterKey, searchKey } from '../../src/jobs/request-keys.ts';
import { main } from '../../src/cli/main.ts';
import { loadJob } from '../../src/jobs/load.ts';
import { planTasks } from '../../src/jobs/plan-tasks.ts';
import { detectDelimiter } from '../../src/input/csv-header.ts';
import { FAST_RATE, FAST_RETRY, count, csv, useWorkspaces, run, taskStatuses, type Workspace } from '../support/run-helpers.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

let dir: string;
let db: string;
const AT = '2026-11-20T08:00:00.000Z';
const ACCOUNT = { location: ['germany'] };
const co = (slug: string) => `https://www.network.com/company/${slug}`;
const post = (id: number) => `https://www.network.com/posts/someone_activity-${id}`;

const STATUS_COLUMNS = ['netingest_line', 'netingest_status', 'netingest_error', 'netingest_input_key'];
const SIMILAR_COLUMNS = [
  'similar_rank', 'similar_page', 'similar_relevancy_score', 'similar_relevancy_grade', 'similar_url', 'similar_name',
  'similar_universal_name', 'similar_type', 'similar_website', 'similar_industries', 'similar_specialities',
  'similar_staff_total', 'similar_staff_range', 'similar_hq_city', 'similar_hq_country', 'similar_founded_year',
  'similar_phone', 'similar_description', 'similar_last_seen_at',
];
const POST_COLUMNS = [
  'post_id', 'post_author_name', 'post_author_headline', 'post_author_url', 'post_timestamp', 'post_text', 'post_reactions',
  'post_comments', 'post_media_count', 'post_media_urls', 'post_media_description', 'post_hashtags', 'post_last_seen_at',
];
const JOB_COLUMNS = [
  'job_rank', 'job_url', 'job_title', 'job_company_name', 'job_company_link', 'job_location', 'job_posted_date',
  'job_is_actively_hiring', 'job_employment_type', 'job_seniority_level', 'job_function', 'job_industries',
  'job_description', 'job_last_seen_at',
];

function writeJob(name: string, def: Record<string, unknown>, csv: string): string {
  writeFileSync(join(dir, `${name}.csv`), csv);
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ name, ...def, input: { ...(def.input as object), csv: join(dir, `${name}.csv`) } }));
  return file;
}

/** The request of every task the jobs' planner makes, JSON-encoded as the ledger stores it, by job, key and page. */
const plannedRequests = new Map<string, string>();

async function planRequests(file: string): Promise<void> {
  const job = await loadJob(file);
  for await (const item of planTasks(job)) {
    if (item.kind === 'task') plannedRequests.set(`${job.name}|${item.inputKey}|${item.page}`, JSON.stringify(item.request));
  }
}

/** A ledger row with the request the job plans for it (as a run stores it), or `request` when given. */
function task(sqlite: BetterSqlite3.Database, job: string, operation: string, inputKey: string, page: number, status: string, error?: [string, string], request?: string) {
  const requestJson = request ?? plannedRequests.get(`${job}|${inputKey}|${page}`) ?? '{}';
  sqlite
    .prepare(`INSERT INTO tasks (job, operation, input_key, page, request_json, status, attempts, last_error_code, last_error,
      created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)`)
    .run(job, operation, inputKey, page, requestJson, status, error?.[0] ?? null, error?.[1] ?? null, AT, AT);
}

function company(sqlite: BetterSqlite3.Database, slug: string, n: number) {
  sqlite
    .prepare(`INSERT OR IGNORE INTO companies (url, name, universal_name, type, website, staff_total, staff_range_start,
      staff_range_end, founded_year, phone, description, first_seen_at, updated_at)
      VALUES (?, ?, ?, 'PRIVATELY_HELD', ?, ?, 11, 50, 2001, '+4930', ?, ?, ?)`)
    .run(co(slug), `Name ${slug}, "Ltd" 🚀`, slug, `https://${slug}.example`, n * 10, `About ${slug}\nsecond line`, AT, AT);
  sqlite.prepare(`INSERT OR IGNORE INTO company_locations (company_url, position, is_headquarter, city, country) VALUES (?, 1, 1, 'münchen', 'germany')`).run(co(slug));
  sqlite.prepare(`INSERT OR IGNORE INTO company_locations (company_url, position, is_headquarter, city, country) VALUES (?, 2, 0, 'paris', 'france')`).run(co(slug));
  sqlite.prepare(`INSERT OR IGNORE INTO company_industries (company_url, position, value) VALUES (?, 2, 'Robotics'), (?, 1, 'Software')`).run(co(slug), co(slug));
}

function similar(sqlite: BetterSqlite3.Database, ref: string, key: string, slug: string, page: number, rank: number, score: number, grade: string) {
  company(sqlite, slug, rank);
  sqlite
    .prepare(`INSERT INTO similar_companies (reference_url, filter_key, company_url, filters, rank, page, relevancy_score,
      relevancy_grade, first_seen_at, last_seen_at) VALUES (?, ?, ?, '{}', ?, ?, ?, ?, ?, ?)`)
    .run(co(ref), key, co(slug), rank, page, score, grade, AT, AT);
}

/** Parsed output as objects by column name (NULL as null, '' as ''), plus the header; the delimiter is the input's. */
function read(file: string): { header: string[]; rows: Record<string, string | null>[] } {
  const text = readFileSync(file, 'utf8');
  const records = parse(text, {
    bom: true,
    delimiter: detectDelimiter(text.slice(0, text.indexOf('\n'))),
    cast: (value, ctx) => (value === '' && !ctx.quoting ? null : value),
  }) as (string | null)[][];
  const header = records[0] as string[];
  return { header, rows: records.slice(1).map((r) => Object.fromEntries(header.map((h, i) => [h, r[i] ?? null]))) };
}

let similarJob: string;
let postJob: string;
let searchJob: string;
const NOTE = 'hello, "world"\nsecond line 🚀 ünïcödé';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-enrich-'));
  db = join(dir, 'data.db');
  similarJob = writeJob('lookalikes', { operation: 'similar-companies', input: { column: 'company_url' }, pages: 2, request: { account: ACCOUNT, num: 2 } }, [
    'company_url,owner,note',
    `www.network.com/company/Acme/,jane,"${NOTE.replaceAll('"', '""')}"`, // 2-3: ok, 3 results over 2 pages
    'network.com/company/globex,omar,', // 4: not_found
    'network.com/company/initech,li,x', // 5: failed
    'not a url,li,x', // 6: invalid_input
    'network.com/company/umbrella,li,x', // 7: deferred
    'network.com/company/hooli,li,x', // 8: pending (tasks planned, not run)
    'https://network.com/company/ACME,dup,x', // 9: duplicate of line 2: its own 3 rows
    'network.com/company/stark,li,x', // 10: pending (never planned)
    'network.com/company/wayne', // 11: malformed row (too few fields): invalid_input, its own field kept
    'network.com/company/wayne,li,x', // 12: ok, page 2 failed
  ].join('\n') + '\n');
  postJob = writeJob('posts', { operation: 'post-details', input: { column: 'post_url' } }, [
    'campaign;post_url',
    `spring;${post(1)}`, // ok
    `spring;${post(2)}`, // not_found
    `fall;${post(3)}`, // failed
    'fall;https://network.com/company/acme', // invalid_input
    `fall;${post(4)}`, // deferred
    `fall;${post(5)}`, // pending
  ].join('\n') + '\n');
  searchJob = writeJob('searches', { operation: 'search-jobs', input: {} }, [
    'label,keywords,location',
    'first,rust developer,berlin', // ok: 3 jobs
    'second,cobol,mars', // not_found
    'third,java,paris', // failed
    'fourth,,', // invalid_input: no parameters
    'fifth,go,rome', // deferred
    'sixth,python,oslo', // pending
    'seventh,Rust Developer , berlin', // a search of its own (keywords keep their case), never planned: pending
  ].join('\n') + '\n');

  for (const file of [similarJob, postJob, searchJob]) await planRequests(file);

  const database = openDatabase(db);
  const { sqlite } = database;
  const key = filterKey(ACCOUNT);
  sqlite.transaction(() => {
    // similar-companies
    task(sqlite, 'lookalikes', 'similar-companies', co('acme'), 1, 'done');
    task(sqlite, 'lookalikes', 'similar-companies', co('acme'), 2, 'done');
    similar(sqlite, 'acme', key, 'third', 2, 1, 0.5, 'C');
    similar(sqlite, 'acme', key, 'second', 1, 2, 0.8, 'B');
    similar(sqlite, 'acme', key, 'first', 1, 1, 0.9, 'A');
    similar(sqlite, 'acme', 'f_none', 'other-filters', 1, 1, 0.99, 'A'); // another filter set: not this job's
    task(sqlite, 'lookalikes', 'similar-companies', co('globex'), 1, 'not_found', ['', 'no similar companies found']);
    task(sqlite, 'lookalikes', 'similar-companies', co('globex'), 2, 'not_found', ['', 'past the last page']);
    task(sqlite, 'lookalikes', 'similar-companies', co('initech'), 1, 'failed', ['HTTP_500', 'server error (500)']);
    task(sqlite, 'lookalikes', 'similar-companies', co('initech'), 2, 'pending');
    task(sqlite, 'lookalikes', 'similar-companies', co('umbrella'), 1, 'deferred');
    task(sqlite, 'lookalikes', 'similar-companies', co('umbrella'), 2, 'deferred');
    task(sqlite, 'lookalikes', 'similar-companies', co('hooli'), 1, 'pending');
    task(sqlite, 'lookalikes', 'similar-companies', co('hooli'), 2, 'pending');
    task(sqlite, 'other-job', 'similar-companies', co('stark'), 1, 'failed', ['X', 'another job']); // not this job's
    task(sqlite, 'lookalikes', 'similar-companies', co('wayne'), 1, 'done');
    task(sqlite, 'lookalikes', 'similar-companies', co('wayne'), 2, 'failed', ['TIMEOUT', 'timed out']);
    similar(sqlite, 'wayne', key, 'first', 1, 1, 0.7, 'B');

    // post-details
    sqlite.prepare(`INSERT INTO posts (post_id, url, author_name, author_headline, author_url, posted_raw, text_content, hashtags,
      media_description, reactions, comments_count, first_seen_at, updated_at) VALUES ('activity-1', ?, 'Jane Doe', 'CTO, "Acme"',
      'https://network.com/in/jane', '21-11-2026', ?, '["#launch","#robots"]', '', 120, 7, ?, ?)`).run(post(1), 'We launched 🚀\nline two, "quoted"', AT, AT);
    sqlite.prepare(`INSERT INTO post_media (post_id, position, url) VALUES ('activity-1', 2, 'https://img/2.png'), ('activity-1', 1, 'https://img/1.png')`).run();
    task(sqlite, 'posts', 'post-details', post(1), 1, 'done');
    task(sqlite, 'posts', 'post-details', post(2), 1, 'not_found', ['', 'post not found']);
    task(sqlite, 'posts', 'post-details', post(3), 1, 'failed', ['HTTP_502', 'bad gateway']);
    task(sqlite, 'posts', 'post-details', post(4), 1, 'deferred');
    task(sqlite, 'posts', 'post-details', post(5), 1, 'pending');

    // search-jobs
    const q = (keywords: string, location: string) => searchKey({ keywords, location });
    sqlite.prepare(`INSERT INTO job_searches (search_key, keywords, location, first_seen_at, last_seen_at) VALUES (?, 'rust developer', 'berlin', ?, ?)`).run(q('rust developer', 'berlin'), AT, AT);
    for (const [i, position] of [[3, 2], [1, 0], [2, 1]] as const) {
      sqlite.prepare(`INSERT INTO jobs (url, title, company_name, company_link, location, posted_date, is_actively_hiring,
        employment_type, description, first_seen_at, updated_at) VALUES (?, ?, 'Acme', ?, 'Berlin, DE', '2026-11-1${i}', 1, 'Full-time', ?, ?, ?)`)
        .run(`https://network.com/jobs/view/${i}`, `Rust dev ${i}`, co('acme'), `Desc ${i}\n• bullet`, AT, AT);
      sqlite.prepare(`INSERT INTO job_search_results (search_key, job_url, position, first_seen_at, last_seen_at, page) VALUES (?, ?, ?, ?, ?, 1)`)
        .run(q('rust developer', 'berlin'), `https://network.com/jobs/view/${i}`, position, AT, AT);
    }
    task(sqlite, 'searches', 'search-jobs', q('rust developer', 'berlin'), 1, 'done');
    task(sqlite, 'searches', 'search-jobs', q('cobol', 'mars'), 1, 'not_found', ['', 'no results found']);
    task(sqlite, 'searches', 'search-jobs', q('java', 'paris'), 1, 'failed', ['HTTP_500', 'oops']);
    task(sqlite, 'searches', 'search-jobs', q('go', 'rome'), 1, 'deferred');
    task(sqlite, 'searches', 'search-jobs', q('python', 'oslo'), 1, 'pending');
  })();
  database.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('enrich similar-companies', () => {
  it('--rows per-result: writes every input row in order with its columns, one row per lookalike, and why when there is none', async () => {
    const out = join(dir, 'lookalikes-out.csv');
    const result = await enrichJob({ db, job: similarJob, out, rows: 'per-result' });
    const { header, rows } = read(out);
    expect(header).toEqual(['company_url', 'owner', 'note', ...STATUS_COLUMNS, ...SIMILAR_COLUMNS]);
    expect(rows.map((r) => [r.netingest_line, r.owner, r.netingest_status, r.similar_url])).toEqual([
      ['2', 'jane', 'ok', co('first')],
      ['2', 'jane', 'ok', co('second')],
      ['2', 'jane', 'ok', co('third')],
      ['4', 'omar', 'not_found', null],
      ['5', 'li', 'failed', null],
      ['6', 'li', 'invalid_input', null],
      ['7', 'li', 'deferred', null],
      ['8', 'li', 'pending', null],
      ['9', 'dup', 'ok', co('first')],
      ['9', 'dup', 'ok', co('second')],
      ['9', 'dup', 'ok', co('third')],
      ['10', 'li', 'pending', null],
      ['11', null, 'invalid_input', null],
      ['12', 'li', 'ok', co('first')],
    ]);
    expect(rows.find((r) => r.netingest_line === '11')!.company_url).toBe('network.com/company/wayne');
    expect(result).toMatchObject({ rows: 14, inputRows: 10, statuses: { ok: 3, not_found: 1, failed: 1, invalid_input: 2, deferred: 1, pending: 2 } });

    // Input values come back exactly as written, repeated on each result row.
    expect(rows[0]!.company_url).toBe('www.network.com/company/Acme/');
    expect(rows.slice(0, 3).map((r) => r.note)).toEqual([NOTE, NOTE, NOTE]);
    expect(rows[3]!.note).toBe('');

    expect(rows[0]).toMatchObject({
      netingest_error: null,
      netingest_input_key: co('acme'),
      similar_rank: '1',
      similar_page: '1',
      similar_relevancy_score: '0.9',
      similar_relevancy_grade: 'A',
      similar_name: 'Name first, "Ltd" 🚀',
      similar_universal_name: 'first',
      similar_type: 'PRIVATELY_HELD',
      similar_website: 'https://first.example',
      similar_industries: 'Software; Robotics',
      similar_specialities: null,
      similar_staff_total: '10',
      similar_staff_range: '11-50',
      similar_hq_city: 'münchen',
      similar_hq_country: 'germany',
      similar_founded_year: '2001',
      similar_phone: '+4930',
      similar_description: 'About first\nsecond line',
      similar_last_seen_at: AT,
    });
    expect(rows.slice(0, 3).map((r) => [r.similar_rank, r.similar_page, r.similar_relevancy_grade])).toEqual([
      ['1', '1', 'A'], ['2', '1', 'B'], ['3', '2', 'C'],
    ]);
    expect(rows[3]).toMatchObject({ netingest_error: 'no similar companies found', netingest_input_key: co('globex') });
    expect(rows[4]!.netingest_error).toBe('page 1: HTTP_500: server error (500)');
    expect(rows[5]!.netingest_error).toMatch(/^company_url "not a url": /);
    expect(rows[5]!.netingest_input_key).toBeNull();
    expect(rows[11]!.netingest_error).toMatch(/no task/);
    expect(rows[12]!.netingest_error).toMatch(/malformed CSV row/);
    expect(rows[13]).toMatchObject({ netingest_status: 'ok', netingest_error: 'page 2: TIMEOUT: timed out', similar_rank: '1' });
    for (const r of rows.filter((x) => x.netingest_status !== 'ok')) {
      for (const c of SIMILAR_COLUMNS) expect(r[c]).toBeNull();
    }
    expect(rows.some((r) => r.similar_url === co('other-filters'))).toBe(false);
  });
});

describe('enrich: one row per input row (the default)', () => {
  it('similar-companies: one row per lead, its lookalikes in numbered columns up to --top, their count beside them', async () => {
    const out = join(dir, 'lookalikes-per-input.csv');
    const result = await enrichJob({ db, job: similarJob, out, top: 2 });
    const { header, rows } = read(out);
    const numbered = (i: number) => ['name', 'url', 'website', 'industries', 'staff_range', 'hq_city', 'hq_country', 'phone', 'relevancy_grade'].map((f) => `similar_${i}_${f}`);
    expect(header).toEqual(['company_url', 'owner', 'note', ...STATUS_COLUMNS, 'similar_count', ...numbered(1), ...numbered(2)]);
    expect(rows.map((r) => [r.netingest_line, r.netingest_status, r.similar_count, r.similar_1_url, r.similar_2_url])).toEqual([
      ['2', 'ok', '3', co('first'), co('second')], // a third lookalike: counted, past --top 2
      ['4', 'not_found', null, null, null],
      ['5', 'failed', null, null, null],
      ['6', 'invalid_input', null, null, null],
      ['7', 'deferred', null, null, null],
      ['8', 'pending', null, null, null],
      ['9', 'ok', '3', co('first'), co('second')],
      ['10', 'pending', null, null, null],
      ['11', 'invalid_input', null, null, null],
      ['12', 'ok', '1', co('first'), null],
    ]);
    expect(result).toMatchObject({ rows: 10, inputRows: 10 });
    expect(rows[0]).toMatchObject({ note: NOTE, similar_1_name: 'Name first, "Ltd" 🚀', similar_1_phone: '+4930', similar_1_hq_country: 'germany', similar_2_relevancy_grade: 'B' });
  });

  it('search-jobs: one row per search, 5 jobs by default; post-details keeps its one post per row', async () => {
    const out = join(dir, 'searches-per-input.csv');
    await enrichJob({ db, job: searchJob, out });
    const { header, rows } = read(out);
    expect(header.filter((c) => c.startsWith('job_'))).toHaveLength(1 + 5 * 6);
    expect(header).toContain('job_5_url');
    expect(rows.map((r) => [r.label, r.job_count, r.job_1_title, r.job_3_title, r.job_4_title])).toEqual([
      ['first', '3', 'Rust dev 1', 'Rust dev 3', null],
      ['second', null, null, null, null],
      ['third', null, null, null, null],
      ['fourth', null, null, null, null],
      ['fifth', null, null, null, null],
      ['sixth', null, null, null, null],
      ['seventh', null, null, null, null],
    ]);
    const posts = join(dir, 'posts-per-input.csv');
    await enrichJob({ db, job: postJob, out: posts });
    expect(read(posts).header).toEqual(['campaign', 'post_url', ...STATUS_COLUMNS, ...POST_COLUMNS]);
  });

  it('refuses --top with --rows per-result, and a --top that is not a whole number from 1 to 100', async () => {
    const out = join(dir, 'never-top.csv');
    await expect(enrichJob({ db, job: similarJob, out, rows: 'per-result', top: 3 })).rejects.toMatchObject({ code: 'USAGE' });
    await expect(enrichJob({ db, job: similarJob, out, top: 0 })).rejects.toThrow(/--top must be a whole number from 1 to 100/);
    // On the command line, --top is quoted as typed, never as NaN.
    for (const [top, why] of [['abc', 'must be a number'], ['1.5', 'must be a whole number'], ['101', 'must be at most 100']]) {
      const stderr = new PassThrough();
      expect(await main(['enrich', similarJob, '--db', db, '--out', out, '--top', top!], { stdout: new PassThrough(), stderr })).toBe(2);
      expect(String(stderr.read()), top).toContain(`--top ${top}: ${why}`);
    }
    expect(existsSync(out)).toBe(false);
  });
});

describe('enrich: an input that is not UTF-8', () => {
  it('says which rows held bytes that are not UTF-8 (written as U+FFFD), rather than change them in silence', async () => {
    // A Latin-1 export: "Jürgen" as 4a fc 72 67 65 6e.
    const latin1 = Buffer.concat([Buffer.from(`owner,post_url\nJ`), Buffer.from([0xfc]), Buffer.from(`rgen,${post(1)}\nAnna,${post(2)}\n`)]);
    const file = writeJob('latin1', { operation: 'post-details', input: { column: 'post_url' } }, '');
    writeFileSync(join(dir, 'latin1.csv'), latin1);
    const stderr = new PassThrough();
    let said = '';
    stderr.on('data', (d: Buffer) => (said += d.toString('utf8')));
    expect(await main(['enrich', file, '--db', db, '--out', join(dir, 'latin1-out.csv')], { stdout: new PassThrough(), stderr })).toBe(0);
    expect(said).toContain(`netingest: 1 input row (the first at line 2) held bytes that are not UTF-8, read and written as U+FFFD (\ufffd): save the job's input CSV as UTF-8`);
  });
});

describe("enrich: the input's delimiter and BOM", () => {
  it('writes with the delimiter and BOM the input has, unless --delimiter / --bom / --no-bom say otherwise', async () => {
    const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
    const file = writeJob('bom-semicolon', { operation: 'post-details', input: { column: 'post_url' } }, '\ufeffcampaign;post_url\r\nspring;' + post(1) + '\r\n');
    const io = () => ({ stdout: new PassThrough(), stderr: new PassThrough() });
    const kept = join(dir, 'bom-kept.csv');
    expect(await main(['enrich', file, '--db', db, '--out', kept], io())).toBe(0);
    const bytes = readFileSync(kept);
    expect(bytes.subarray(0, 3)).toEqual(BOM);
    expect(bytes.subarray(3).toString('utf8').split('\n')[0]).toBe(['campaign', 'post_url', ...STATUS_COLUMNS, ...POST_COLUMNS].join(';'));
    expect(read(kept).rows[0]).toMatchObject({ campaign: 'spring', post_author_name: 'Jane Doe' });

    const changed = join(dir, 'bom-changed.csv');
    expect(await main(['enrich', file, '--db', db, '--out', changed, '--no-bom', '--delimiter', ','], io())).toBe(0);
    const text = readFileSync(changed, 'utf8');
    expect(text.startsWith('campaign,post_url,netingest_line,')).toBe(true);

    const tabbed = join(dir, 'tabbed.csv');
    expect(await main(['enrich', postJob, '--db', db, '--out', tabbed, '--delimiter', 'tab', '--bom'], io())).toBe(0);
    expect(readFileSync(tabbed, 'utf8')).toMatch(/^\ufeffcampaign\tpost_url\t/);
    // The plain comma-separated input without a BOM: a comma-separated output without one.
    const plain = join(dir, 'plain-comma.csv');
    expect(await main(['enrich', similarJob, '--db', db, '--out', plain], io())).toBe(0);
    expect(readFileSync(plain, 'utf8')).toMatch(/^company_url,owner,note,/);
  });
});

describe('enrich: statuses against what the job plans now', () => {
  it('a task planned with another request is pending, a page never planned is pending, empty or 404 pages are not_found', async () => {
    const file = writeJob('replanned', { operation: 'similar-companies', input: { column: 'company_url' }, pages: 2, request: { account: ACCOUNT, num: 2 } }, [
      'company_url',
      'network.com/company/old-request', // failed and pending under the old filters: pending
      'network.com/company/fewer-pages', // page 1 not found; page 2 planned since "pages" went up: pending
      'network.com/company/empty', // page 1 answered empty (done), page 2 past the last page: not_found
      'network.com/company/old-request', // repeated: same as its first row
    ].join('\n') + '\n');
    await planRequests(file);
    const old = JSON.stringify({ url: co('old-request'), account: { location: ['france'] }, page: 1, num: 2 });
    const database = openDatabase(db);
    const { sqlite } = database;
    task(sqlite, 'replanned', 'similar-companies', co('old-request'), 1, 'failed', ['HTTP_500', 'server error (500)'], old);
    task(sqlite, 'replanned', 'similar-companies', co('old-request'), 2, 'deferred', undefined, old.replace('"page":1', '"page":2'));
    task(sqlite, 'replanned', 'similar-companies', co('fewer-pages'), 1, 'not_found', ['', 'no similar companies found']);
    task(sqlite, 'replanned', 'similar-companies', co('empty'), 1, 'done');
    task(sqlite, 'replanned', 'similar-companies', co('empty'), 2, 'not_found', ['', 'past the last page (1)']);
    database.close();

    const out = join(dir, 'replanned-out.csv');
    await enrichJob({ db, job: file, out });
    expect(read(out).rows.map((r) => [r.netingest_input_key, r.netingest_status, r.netingest_error])).toEqual([
      [co('old-request'), 'pending', expect.stringMatching(/^the job's request changed since it ran/)],
      [co('fewer-pages'), 'pending', 'not run yet (page 2 never planned: the job\'s "pages" grew since it ran)'],
      [co('empty'), 'not_found', 'past the last page (1)'],
      [co('old-request'), 'pending', expect.stringMatching(/^the job's request changed since it ran/)],
    ]);
  });
});

describe('enrich post-details', () => {
  it('writes one row per post with author, text, engagement and media, and every status', async () => {
    const out = join(dir, 'posts-out.csv');
    const result = await enrichJob({ db, job: postJob, out });
    const { header, rows } = read(out);
    expect(header).toEqual(['campaign', 'post_url', ...STATUS_COLUMNS, ...POST_COLUMNS]);
    expect(rows.map((r) => [r.campaign, r.netingest_status])).toEqual([
      ['spring', 'ok'], ['spring', 'not_found'], ['fall', 'failed'], ['fall', 'invalid_input'], ['fall', 'deferred'], ['fall', 'pending'],
    ]);
    expect(rows[0]).toEqual({
      campaign: 'spring',
      post_url: post(1),
      netingest_line: '2',
      netingest_status: 'ok',
      netingest_error: null,
      netingest_input_key: post(1),
      post_id: 'activity-1',
      post_author_name: 'Jane Doe',
      post_author_headline: 'CTO, "Acme"',
      post_author_url: 'https://network.com/in/jane',
      post_timestamp: '21-11-2026',
      post_text: 'We launched 🚀\nline two, "quoted"',
      post_reactions: '120',
      post_comments: '7',
      post_media_count: '2',
      post_media_urls: 'https://img/1.png; https://img/2.png',
      post_media_description: '',
      post_hashtags: '#launch; #robots',
      post_last_seen_at: AT,
    });
    expect(rows[1]!.netingest_error).toBe('post not found');
    expect(rows[2]!.netingest_error).toBe('HTTP_502: bad gateway');
    expect(rows[3]!.netingest_error).toMatch(/^post_url "https:\/\/network.com\/company\/acme": not a post/);
    expect(result.statuses).toEqual({ ok: 1, not_found: 1, failed: 1, invalid_input: 1, deferred: 1, pending: 1 });
  });
});

describe('enrich search-jobs', () => {
  it('--rows per-result: writes one row per job found, in result order, and every status', async () => {
    const out = join(dir, 'searches-out.csv');
    await enrichJob({ db, job: searchJob, out, rows: 'per-result' });
    const { header, rows } = read(out);
    expect(header).toEqual(['label', 'keywords', 'location', ...STATUS_COLUMNS, ...JOB_COLUMNS]);
    expect(rows.map((r) => [r.label, r.netingest_status, r.job_rank, r.job_url])).toEqual([
      ['first', 'ok', '1', 'https://network.com/jobs/view/1'],
      ['first', 'ok', '2', 'https://network.com/jobs/view/2'],
      ['first', 'ok', '3', 'https://network.com/jobs/view/3'],
      ['second', 'not_found', null, null],
      ['third', 'failed', null, null],
      ['fourth', 'invalid_input', null, null],
      ['fifth', 'deferred', null, null],
      ['sixth', 'pending', null, null],
      ['seventh', 'pending', null, null],
    ]);
    expect(rows[0]).toMatchObject({
      netingest_input_key: searchKey({ keywords: 'rust developer', location: 'berlin' }),
      job_title: 'Rust dev 1',
      job_company_name: 'Acme',
      job_company_link: co('acme'),
      job_location: 'Berlin, DE',
      job_posted_date: '2026-11-11',
      job_is_actively_hiring: '1',
      job_employment_type: 'Full-time',
      job_seniority_level: null,
      job_description: 'Desc 1\n• bullet',
      job_last_seen_at: AT,
    });
    expect(rows[5]!.netingest_error).toMatch(/no search parameters/);
  });

  it('writes JSON Lines on request', async () => {
    const stream = new PassThrough();
    let text = '';
    stream.on('data', (c: Buffer) => (text += c.toString()));
    await enrichJob({ db, job: searchJob, stream, format: 'jsonl', rows: 'per-result' });
    const objects = text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(objects).toHaveLength(9);
    expect(objects[0]).toMatchObject({ label: 'first', netingest_line: 2, netingest_status: 'ok', job_rank: 1 });
    expect(objects[3]).toMatchObject({ label: 'second', netingest_status: 'not_found', job_rank: null });
  });
});

describe('netingest enrich (CLI)', () => {
  it('writes --out atomically and reports the counts; a missing job file exits 2 with nothing written', async () => {
    const stderr = new PassThrough();
    let message = '';
    stderr.on('data', (c: Buffer) => (message += c.toString()));
    const out = join(dir, 'cli-enriched.csv');
    expect(await main(['enrich', postJob, '--db', db, '--out', out], { stdout: new PassThrough(), stderr })).toBe(0);
    expect(read(out).rows).toHaveLength(6);
    expect(message).toMatch(/wrote 6 rows for 6 input rows \(1 ok, 1 not_found, 1 failed, 1 invalid_input, 1 deferred, 1 pending\)/);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);

    const missing = join(dir, 'never.csv');
    expect(await main(['enrich', join(dir, 'nope.json'), '--db', db, '--out', missing], { stdout: new PassThrough(), stderr: new PassThrough() })).toBe(2);
    expect(existsSync(missing)).toBe(false);
  });

  it('--bom starts the enriched CSV with a UTF-8 byte-order mark, the rows unchanged; with jsonl it exits 2', async () => {
    const plain = join(dir, 'cli-plain.csv');
    const marked = join(dir, 'cli-bom.csv');
    const io = () => ({ stdout: new PassThrough(), stderr: new PassThrough() });
    expect(await main(['enrich', postJob, '--db', db, '--out', plain], io())).toBe(0);
    expect(await main(['enrich', postJob, '--db', db, '--out', marked, '--bom'], io())).toBe(0);
    expect(readFileSync(marked)).toEqual(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), readFileSync(plain)]));
    const refused = join(dir, 'cli-bom.jsonl');
    expect(await main(['enrich', postJob, '--db', db, '--out', refused, '--format', 'jsonl', '--bom'], io())).toBe(2);
    expect(existsSync(refused)).toBe(false);
  });

  it('refuses to write over its own input CSV or the database', async () => {
    const input = join(dir, 'posts.csv');
    const before = readFileSync(input, 'utf8');
    await expect(enrichJob({ db, job: postJob, out: input })).rejects.toMatchObject({ code: 'OUT_IS_INPUT' });
    await expect(enrichJob({ db, job: postJob, out: db })).rejects.toMatchObject({ code: 'OUT_IS_INPUT' });
    expect(readFileSync(input, 'utf8')).toBe(before);
  });

  it('an enrich stopped midway leaves no file', async () => {
    const out = join(dir, 'stopped.csv');
    const controller = new AbortController();
    controller.abort();
    await expect(enrichJob({ db, job: similarJob, out, signal: controller.signal })).rejects.toMatchObject({ code: 'INTERRUPTED' });
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

describe('enrich post lookup', () => {
  it('derives the post id from any URL form and finds the post through an index, never a scan', () => {
    const id = '7123456789012345678';
    expect(postIdOfUrl(`https://network.com/posts/someone_topic-activity-${id}-abcd`)).toBe(`activity-${id}`);
    expect(postIdOfUrl(`https://network.com/feed/update/urn:li:activity:${id}`)).toBe(`activity-${id}`);
    expect(postIdOfUrl(`https://network.com/feed/update/urn%3Ali%3Aactivity%3A${id}`)).toBe(`activity-${id}`);
    expect(postIdOfUrl('https://network.com/pulse/some-article-jane-doe')).toBeNull();
    const database = openDatabase(db);
    try {
      for (const sql of [POST_BY_ID_SQL, POST_BY_URL_SQL]) {
        const plan = (database.sqlite.prepare(`EXPLAIN QUERY PLAN ${sql.sqlite}`).all('x') as Array<{ detail: string }>).map((r) => r.detail);
        expect(plan[0], plan.join('\n')).toMatch(/^SEARCH p USING INDEX (sqlite_autoindex_posts_1 \(post_id=\?\)|posts_url_idx \(url=\?\))$/);
        expect(plan.filter((d) => d.startsWith('SCAN')), plan.join('\n')).toEqual([]);
      }
    } finally {
      database.close();
    }
  });
});

describe('enrich after a real run against the sandbox', () => {
  const TOKEN = 'enrich-token-5c1e';
  const newSandbox = useSandboxes();
  const workspaces = useWorkspaces();
  let ws: Workspace;
  beforeEach(async () => {
    ws = await workspaces();
  });

  it('post-details: every URL form of one post finds it (posts are keyed by activity id, not by the URL asked last)', async () => {
    const sandbox = await newSandbox({ port: 0, tokens: { [TOKEN]: 1000 } });
    const id = '7123456789012345678';
    await ws.write('posts.csv', csv(['post_url'], [
      [`https://www.network.com/posts/someone_topic-activity-${id}-abcd`],
      [`https://www.network.com/feed/update/urn:li:activity:${id}`],
      ['https://www.network.com/posts/other_topic-activity-7123456789012345999-wxyz'],
    ]));
    const file = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
    const [job] = await ws.load(file);
    const summary = await run(ws, sandbox, TOKEN, [job!]);
    expect(summary.status).toBe('completed');
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 3 });
    // One post row for the two forms: its url is whichever form was stored last.
    expect(count(ws, 'SELECT count(*) FROM posts WHERE post_id = ?', `activity-${id}`)).toBe(1);

    const out = join(ws.dir, 'posts-out.csv');
    const result = await enrichJob({ db: ws.db, job: file, out, cwd: ws.dir });
    const { rows } = read(out);
    expect(rows.map((r) => [r.netingest_status, r.netingest_error, r.post_id])).toEqual([
      ['ok', null, `activity-${id}`],
      ['ok', null, `activity-${id}`],
      ['ok', null, 'activity-7123456789012345999'],
    ]);
    expect(rows[0]!.post_text).not.toBeNull();
    expect(rows[1]!.post_text).toBe(rows[0]!.post_text);
    expect(result.statuses).toMatchObject({ ok: 3, not_found: 0 });
  });

  it('post-details: a post answered but no longer in the dataset is failed with why, not not_found', async () => {
    const sandbox = await newSandbox({ port: 0, tokens: { [TOKEN]: 1000 } });
    await ws.write('posts.csv', csv(['post_url'], [['https://www.network.com/posts/someone_topic-activity-7123456789012345678-abcd']]));
    const file = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
    expect((await run(ws, sandbox, TOKEN, await ws.load(file))).status).toBe('completed');
    const database = openDatabase(ws.db);
    database.sqlite.prepare('DELETE FROM posts').run();
    database.close();

    const out = join(ws.dir, 'posts-out.csv');
    await enrichJob({ db: ws.db, job: file, out, cwd: ws.dir });
    const [row] = read(out).rows;
    expect(row).toMatchObject({ netingest_status: 'failed', post_id: null });
    expect(row!.netingest_error).toMatch(/^answered, but the dataset holds no post for it/);
  });

  it("similar-companies: after the job's filters changed, a row whose stored results are for the old filters is pending, with why", async () => {
    const sandbox = await newSandbox({ port: 0, tokens: { [TOKEN]: 1000 } });
    await ws.write('leads.csv', csv(['company_url', 'owner'], [
      ['https://www.network.com/company/acme-robotics', 'jane'],
      ['https://www.network.com/company/globex-logistics', 'omar'],
      ['www.network.com/company/Acme-Robotics/', 'dup'], // a repeated input: no tasks of its own
    ]));
    const define = (account: Record<string, unknown>) =>
      ws.job('lookalikes', {
        operation: 'similar-companies',
        input: { csv: 'leads.csv', column: 'company_url' },
        request: { account, num: 5 },
        pages: 2,
        rate: FAST_RATE,
        retry: FAST_RETRY,
      });
    const file = await define({ location: ['germany'] });
    expect((await run(ws, sandbox, TOKEN, await ws.load(file))).status).toBe('completed');
    const settled = taskStatuses(ws, 'lookalikes');
    expect(settled['done']).toBeGreaterThanOrEqual(2);
    expect(settled['pending'] ?? 0).toBe(0);

    const out = join(ws.dir, 'leads-out.csv');
    const before = await enrichJob({ db: ws.db, job: file, out, cwd: ws.dir });
    expect(before.statuses).toMatchObject({ ok: 3, not_found: 0, pending: 0 });

    // The job now asks for other filters: the stored results are under the old filter key, and the next run
    // would call every page again (the ledger compares the stored request with the planned one).
    await define({ location: ['france'] });
    const after = await enrichJob({ db: ws.db, job: file, out, cwd: ws.dir, rows: 'per-result' });
    const { rows } = read(out);
    expect(rows.map((r) => [r.owner, r.netingest_status, r.similar_url])).toEqual([
      ['jane', 'pending', null],
      ['omar', 'pending', null],
      ['dup', 'pending', null],
    ]);
    for (const r of rows) expect(r.netingest_error).toMatch(/^the job's request changed since it ran/);
    expect(after.statuses).toMatchObject({ ok: 0, not_found: 0, pending: 3 });
  });
});
