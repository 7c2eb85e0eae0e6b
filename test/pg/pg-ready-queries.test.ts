/**
 * docs/schema.md's ready queries and views, run on SQLite and on PostgreSQL over the same rows: the same SQL
 * must work on both engines and give the same answers (values compared after the drivers' type differences).
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { openPgStore, type PgStore } from '../../src/store/pg/open.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { forEachEngine } from './engines.ts';
import { twoNights } from './history-world.ts';
import { useWorkspaces } from '../support/run-helpers.ts';

const SCHEMA_DOC = new URL('../../docs/schema.md', import.meta.url);
const VIEWS = ['v_lookalikes', 'v_latest_jobs_per_company', 'v_top_posts_per_author', 'v_job_progress'];

/** The ```sql blocks under "## Ready queries". */
function readyQueries(): string[] {
  const doc = readFileSync(SCHEMA_DOC, 'utf8');
  const section = doc.slice(doc.indexOf('## Ready queries'));
  return [...section.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!.trim().replace(/;$/, ''));
}

/** The queries over the history: run over ROWS as the others, and over two real nights (below). */
const readsHistory = (query: string) => /\bFROM changes\b/.test(query);

const now = new Date();
const today = now.toISOString().slice(0, 10);
const iso = (daysAgo: number) => new Date(now.getTime() - daysAgo * 86_400_000).toISOString();
const ACME = 'https://www.network.com/company/acme';

/** The same rows for both engines; JSON columns as JSON text. */
const ROWS: Record<string, Array<Record<string, unknown>>> = {
  companies: [1, 2, 3].map((n) => ({
    url: `https://www.network.com/company/co-${n}`, name: `Co ${n}`, staff_total: n === 3 ? null : n * 100,
    followers: n * 10, funding_data: '{"rounds":2}', first_seen_at: iso(3), updated_at: iso(1),
  })),
  company_locations: [1, 2, 3].map((n) => ({
    company_url: `https://www.network.com/company/co-${n}`, position: 1, is_headquarter: 1, country: 'de', country_name: n === 2 ? 'france' : 'germany', is_primary: 1,
  })),
  similar_companies: [1, 2, 3].flatMap((n) => ['f1', 'f2'].map((f, i) => ({
    reference_url: ACME, filter_key: f, company_url: `https://www.network.com/company/co-${n}`, filters: '{}', rank: n + i, page: 1,
    relevancy_score: 0.5 + n / 10 + i / 100, relevancy_grade: 'AB'[i], first_seen_at: iso(3), last_seen_at: iso(1),
  }))),
  posts: [1, 2, 3].map((n) => ({
    post_id: `activity-${n}`, url: `https://www.network.com/posts/p-${n}`, author_name: `Author ${n % 2}`, author_url: `https://www.network.com/in/a-${n % 2}`,
    posted_raw: '01-01-2020', posted_on: n === 3 ? '2020-01-01' : today, reactions: n * 7, comments_count: n, hashtags: '["#a"]',
    first_seen_at: iso(2), updated_at: iso(1),
  })),
  jobs: [1, 2, 3, 4].map((n) => ({
    url: `https://www.network.com/jobs/view/${n}`, title: `Job ${n}`, company_name: n === 3 ? 'Other' : 'Acme', posted_date: n === 4 ? '2020-01-01' : today,
    company_link: `https://www.network.com/company/lead-${n}`,
    posted_timestamp: 1_700_000_000 + n, is_actively_hiring: n % 2, first_seen_at: iso(2), updated_at: iso(1),
  })),
  tasks: [1, 2, 3, 4].map((n) => ({
    id: n, job: n === 4 ? 'posts' : 'lookalikes', operation: 'similar-companies', input_key: `https://www.network.com/company/lead-${n}`, page: 1,
    request_json: `{"url":"lead-${n}"}`, input_line: n + 1, status: ['done', 'pending', 'failed', 'done'][n - 1], last_error_code: n === 3 ? 'SCHEMA' : null,
    created_at: iso(2), updated_at: iso(1), completed_at: n === 2 ? null : iso(1), run_id: 1,
  })),
  api_calls: [1, 2, 3, 4].map((n) => ({
    id: n, run_id: 1, task_id: n, operation: 'similar-companies', method: 'GET', path: '/x', status: 200, latency_ms: 12.5,
    total_credits: 1000, credits_used: 10 + n * 1.5, credits_remaining: 990 - n * 1.5, at: iso(n === 4 ? 2 : 1),
  })),
  // A little history: a new job at a lead, staff and reactions doubled, a lookalike come on the second night.
  changes: [
    { run_id: 1, at: iso(3), entity: 'lookalike', key: ACME, change: 'added', new: 'https://www.network.com/company/co-1' },
    { run_id: 2, at: iso(0), entity: 'lookalike', key: ACME, change: 'added', new: 'https://www.network.com/company/co-2' },
    { run_id: 2, at: iso(0), entity: 'job', key: 'https://www.network.com/jobs/view/1', change: 'added' },
    { run_id: 2, at: iso(0), entity: 'job', key: 'https://www.network.com/jobs/view/3', change: 'added' },
    { run_id: 2, at: iso(1), entity: 'company', key: 'https://www.network.com/company/co-2', change: 'changed', field: 'staff_total', old: '150', new: '200' },
    { run_id: 2, at: iso(1), entity: 'company', key: 'https://www.network.com/company/co-1', change: 'changed', field: 'staff_total', old: '50', new: '100' },
    { run_id: 2, at: iso(1), entity: 'post', key: 'activity-2', change: 'changed', field: 'reactions', old: '5', new: '14' },
    { run_id: 2, at: iso(1), entity: 'post', key: 'activity-3', change: 'changed', field: 'reactions', old: '20', new: '21' },
  ],
};

function insertSqlite(db: Database): void {
  for (const [table, rows] of Object.entries(ROWS)) {
    for (const row of rows) {
      const cols = Object.keys(row);
      db.sqlite.prepare(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`).run(...Object.values(row));
    }
  }
}

async function insertPg(store: PgStore): Promise<void> {
  for (const [table, rows] of Object.entries(ROWS)) {
    for (const row of rows) {
      const cols = Object.keys(row);
      // as given (jsonb) columns take a JSON value: the number 10 is the JSON text 10.
      const values = Object.entries(row).map(([k, v]) => (['followers', 'is_primary'].includes(k) && v !== null ? JSON.stringify(v) : v));
      await store.pool.query(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})`, values);
    }
  }
}

/** Values as both engines mean them: numbers as numbers (pg sends bigint and numeric as text), dates as text. */
function normalize(rows: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  return rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([k, v]) => {
        if (typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v)) return [k, Number(v)];
        if (typeof v === 'number') return [k, Math.round(v * 1e6) / 1e6];
        // group_concat's order is the engine's: compare its parts.
        if (typeof v === 'string' && v.includes(' | ')) return [k, v.split(' | ').sort().join(' | ')];
        return [k, v];
      }),
    ),
  );
}

describe.skipIf(!pgClusterUrl)(`docs/schema.md's ready queries on both engines${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let dir: string;
  let sqlite: Database;
  let store: PgStore;
  let client: pg.Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'netingest-ready-'));
    sqlite = openDatabase(join(dir, 'netingest.db'));
    insertSqlite(sqlite);
    const url = await newMigratedPgDatabase('ready');
    store = await openPgStore(url);
    await insertPg(store);
    // Days as text, as SQLite gives them (pg's default turns a date into a local-midnight Date).
    client = new pg.Client({
      connectionString: url,
      options: '-c TimeZone=UTC',
      types: { getTypeParser: ((oid: number, format?: 'text' | 'binary') => (oid === 1082 ? (s: string) => s : pg.types.getTypeParser(oid, format))) as typeof pg.types.getTypeParser },
    });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await store?.close();
    sqlite?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('finds the nine ready queries in docs/schema.md, four of them over the history', () => {
    expect(readyQueries()).toHaveLength(9);
    expect(readyQueries().filter(readsHistory)).toHaveLength(4);
  });

  it.each(readyQueries().map((q, i) => [i + 1, q] as const))('ready query %i gives the same rows on both', async (_n, query) => {
    const onSqlite = normalize(sqlite.sqlite.prepare(query).all() as Array<Record<string, unknown>>);
    // timestamptz (changes.at) comes back as a Date: the instant SQLite keeps as ISO text.
    const onPg = normalize((await client.query(query)).rows).map((row) =>
      Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v])),
    );
    expect(onSqlite.length).toBeGreaterThan(0);
    expect(onPg).toEqual(onSqlite);
  });

  it.each(VIEWS)('view %s has the same rows on both', async (view) => {
    const columns = 'SELECT * FROM ' + view;
    const onSqlite = normalize(sqlite.sqlite.prepare(columns).all() as Array<Record<string, unknown>>);
    const onPg = normalize((await client.query(columns)).rows).map((row) =>
      // timestamptz comes back as a Date: the instant SQLite keeps as ISO text.
      Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v])),
    );
    expect(onSqlite.length).toBeGreaterThan(0);
    expect(onPg).toEqual(onSqlite);
  });

  it("gives SQLite's answers for the date functions users write", async () => {
    const expressions = [
      "date('2026-11-25', 'weekday 0')", "date('2026-11-29', 'weekday 0', '-6 days')", "date('2026-11-25T23:30:00.000Z', '+1 day')",
      "strftime('%Y-%m-01', '2026-11-25')", "strftime('%W %w %j %H:%M:%S', '2026-03-08T05:06:07Z')", "strftime('%s', '2026-01-01')",
      "datetime('2026-11-25T10:00:00Z', 'start of month', '+2 hours')", "date('2026-11-25', 'start of year')", "date('not a date', '+1 day')",
      "date('2026-11-25', 'fortnight')", "round(2.345678, 2)", "raw_body('{\"a\":1}', NULL)",
    ];
    for (const expression of expressions) {
      const onSqlite = normalize([sqlite.sqlite.prepare(`SELECT ${expression} AS v`).get() as Record<string, unknown>])[0]!.v;
      const onPg = normalize((await client.query(`SELECT ${expression} AS v`)).rows)[0]!.v;
      expect({ expression, v: onPg }).toEqual({ expression, v: onSqlite });
    }
  });

  it('differs where docs/postgres.md says: month arithmetic past a month end', async () => {
    const expression = "SELECT date('2026-01-31', '+1 month') AS v";
    expect(sqlite.sqlite.prepare(expression).get()).toEqual({ v: '2026-03-03' });
    expect((await client.query(expression)).rows[0]).toEqual({ v: '2026-02-28' });
  });
});

/**
 * The history's ready queries, unchanged, over two nights 30 days apart in the sandbox's world (ageDays 1, then
 * 31): each gives the rows the history itself says it should, and some.
 */
const [NEW_JOBS, STAFF_GREW, REACTIONS_DOUBLED, NEW_LOOKALIKES] = readyQueries().filter(readsHistory);
const workspaces = useWorkspaces();

interface ChangeRow { run_id: number; entity: string; key: string; change: string; field: string | null; old: string | null; new: string | null }

/** The first recorded change of `field` per key: its old value is the one first seen (or 30 days ago: all are recent here). */
function firstOld(changes: readonly ChangeRow[], entity: string, field: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of changes) if (c.entity === entity && c.field === field && c.old !== null && !out.has(c.key)) out.set(c.key, Number(c.old));
  return out;
}

forEachEngine("docs/schema.md's ready queries over the history", (engine) => {
  it('answer what the history recorded', async () => {
    const { db, runs, leads } = await twoNights(engine, await workspaces(), 31);
    const changes = await db.rows<ChangeRow>('SELECT run_id, entity, key, change, field, old, new FROM changes ORDER BY at, id');
    const sorted = (xs: Iterable<string>) => [...xs].sort();

    const jobs = await db.rows<{ url: string; company_link: string }>('SELECT url, company_link FROM jobs');
    const addedJobs = new Set(changes.filter((c) => c.entity === 'job' && c.change === 'added').map((c) => c.key));
    const expectedJobs = jobs.filter((j) => addedJobs.has(j.url) && leads.includes(j.company_link)).map((j) => j.url);
    expect(expectedJobs.length).toBeGreaterThan(0);
    expect(sorted((await db.rows<{ url: string }>(NEW_JOBS!)).map((r) => r.url))).toEqual(sorted(expectedJobs));

    const staffNow = new Map((await db.rows<{ url: string; staff_total: number }>('SELECT url, staff_total FROM companies')).map((r) => [r.url, r.staff_total]));
    const expectedGrew = [...firstOld(changes, 'company', 'staff_total')].filter(([url, before]) => before > 0 && staffNow.get(url)! > before * 1.1).map(([url]) => url);
    expect(expectedGrew.length).toBeGreaterThan(0);
    const grew = await db.rows<{ url: string; staff_before: number; staff_now: number; growth_pct: number }>(STAFF_GREW!);
    expect(sorted(grew.map((r) => r.url))).toEqual(sorted(expectedGrew));
    for (const r of grew) expect(Number(r.growth_pct)).toBeCloseTo((100 * (r.staff_now - r.staff_before)) / r.staff_before, 1);

    const reactionsNow = new Map((await db.rows<{ post_id: string; reactions: number }>('SELECT post_id, reactions FROM posts')).map((r) => [r.post_id, r.reactions]));
    const expectedDoubled = [...firstOld(changes, 'post', 'reactions')].filter(([id, first]) => first > 0 && reactionsNow.get(id)! >= 2 * first).map(([id]) => id);
    expect(expectedDoubled.length).toBeGreaterThan(0);
    expect(sorted((await db.rows<{ post_id: string }>(REACTIONS_DOUBLED!)).map((r) => r.post_id))).toEqual(sorted(expectedDoubled));

    // The first night's members are the lists as first seen, not members that appeared; so are the lists of
    // the leads added before the second night.
    const seenFirstNight = new Set(changes.filter((c) => c.entity === 'lookalike' && c.run_id === runs[0]).map((c) => c.key));
    const expectedNew = changes
      .filter((c) => c.entity === 'lookalike' && c.change === 'added' && c.run_id === runs[1] && seenFirstNight.has(c.key))
      .map((c) => `${c.key} ${c.new}`);
    expect(expectedNew.length).toBeGreaterThan(0);
    expect(sorted((await db.rows<{ reference: string; company_url: string }>(NEW_LOOKALIKES!)).map((r) => `${r.reference} ${r.company_url}`))).toEqual(sorted(expectedNew));
  });
});
