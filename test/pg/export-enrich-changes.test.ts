/**
 * `enrich --changes-since`: per lead, what the history recorded since a time, after two nights against the
 * sandbox with the world moved between them; the same on both engines.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { enrichJob } from '../../src/export/enrich.ts';
import { changesInWords as inWords } from '../../src/store/readers/enrich-changes.ts';
import type { Job } from '../../src/jobs/schema.ts';
import { forEachEngine, type TestDb } from './engines.ts';
import { HISTORY_REFS, twoNights, type HistoryWorld } from './history-world.ts';
import { inProcess, makeWorkspace, type Workspace } from '../support/run-helpers.ts';

type Change = Parameters<typeof inWords>[0][number];
type Line = Record<string, unknown>;

async function enriched(ws: Workspace, db: TestDb, job: Job, changesSince: string, name: string): Promise<Line[]> {
  const out = join(ws.dir, `${name}.jsonl`);
  await enrichJob({ db: db.locator, job, out, format: 'jsonl', rows: 'per-input', changesSince });
  return readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Line);
}

const items = (line: Line) => (line['changes_since'] === null ? [] : String(line['changes_since']).split('; '));

forEachEngine('enrich --changes-since', (engine) => {
  // Both cases read one two-night dataset per engine (each writes only its own output files): two nights
  // against the sandbox each, not four.
  let ws: Workspace;
  let world: HistoryWorld;
  beforeAll(async () => {
    ws = await makeWorkspace();
    world = await twoNights(engine, ws);
  }, 60_000);
  afterAll(() => ws?.cleanup());

  it("adds per lead what changed since the time: a company's lookalikes, a post's reactions, a search's jobs", async () => {
    const { db, jobs, runs } = world;
    // Since the second night began: its changes only.
    const since = (await db.rows<{ at: string }>('SELECT min(at) AS at FROM changes WHERE run_id = ?', runs[1]))[0]!.at;
    const night2 = await db.rows<Change>('SELECT entity, key, change, field, old, new FROM changes WHERE run_id = ? ORDER BY at, id', runs[1]);

    const leads = await enriched(ws, db, jobs.lookalikes, since, 'leads');
    let withLookalikes = 0;
    for (const ref of HISTORY_REFS) {
      const line = leads.find((l) => l['company_url'] === ref)!;
      const expected = night2.filter((c) => c.entity === 'lookalike' && c.key === ref).map((c) => `lookalike ${c.change} ${c.new ?? c.old}`);
      const got = items(line).filter((i) => i.startsWith('lookalike '));
      expect(got.sort()).toEqual(expected.sort());
      expect(line['changes_count']).toBe(items(line).length);
      if (expected.length > 0) withLookalikes++;
    }
    expect(withLookalikes).toBeGreaterThan(0);

    const posts = await enriched(ws, db, jobs.posts, since, 'posts');
    const reactions = night2.filter((c) => c.entity === 'post' && c.field === 'reactions');
    expect(reactions.length).toBeGreaterThan(0);
    for (const c of reactions) {
      const line = posts.find((l) => l['post_id'] === c.key)!;
      expect(items(line)).toContain(`reactions ${c.old} -> ${c.new}`);
    }

    const searches = await enriched(ws, db, jobs.searches, since, 'searches');
    const members = night2.filter((c) => c.entity === 'search').map((c) => `${c.key} job ${c.change} ${c.new ?? c.old}`);
    expect(members.length).toBeGreaterThan(0);
    const listed = searches.flatMap((l) => items(l).filter((i) => i.startsWith('job added ') || i.startsWith('job removed ')).map((i) => `${String(l['netingest_input_key'])} ${i}`));
    expect(listed.sort()).toEqual(members.sort());
  });

  it('since before the first night: each post added, then its reactions from the first value to the last; a bad time is refused', async () => {
    const { db, jobs, runs } = world;
    const posts = await enriched(ws, db, jobs.posts, '2000-01-01', 'posts');
    const all = await db.rows<Change>("SELECT entity, key, change, field, old, new FROM changes WHERE entity = 'post' AND field = 'reactions' ORDER BY at, id");
    expect(runs[1]).toBeGreaterThan(runs[0]);
    // Some posts' reactions moved, so the check of their first and last value below is made.
    expect(all.length).toBeGreaterThan(0);
    for (const line of posts) {
      const id = String(line['post_id']);
      const mine = all.filter((c) => c.key === id);
      // First seen within the window: the post is added, then its reactions moved once from the first value.
      expect(items(line)[0]).toBe('post added');
      if (mine.length > 0) expect(items(line)).toContain(`reactions ${mine[0]!.old} -> ${mine.at(-1)!.new}`);
      expect(items(line).filter((i) => i.startsWith('reactions ')).length).toBe(mine.length > 0 ? 1 : 0);
    }
    await expect(enrichJob({ db: db.locator, job: jobs.posts, out: join(ws.dir, 'x.csv'), changesSince: 'last' })).rejects.toMatchObject({ code: 'USAGE' });

    // The command line: the flag reaches enrich, and a bad value exits 2 naming it.
    const out = join(ws.dir, 'cli.csv');
    // Its input by an absolute path: the command reads a relative one from the current directory.
    const job = await ws.job('posts-cli', { operation: 'post-details', input: { csv: join(ws.dir, 'posts.csv'), column: 'post_url' } });
    const ok = await inProcess(['enrich', job, '--db', db.locator, '--out', out, '--changes-since', '2000-01-01']);
    expect(ok.code).toBe(0);
    expect(readFileSync(out, 'utf8').split('\n')[0]).toMatch(/,changes_count,changes_since$/);
    const bad = await inProcess(['enrich', job, '--db', db.locator, '--out', out, '--changes-since', 'yesterday']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--changes-since yesterday');
  });
});

it('words a value changed twice as one line from its first value to its last, drops one changed back, and cuts long values', () => {
  const c = (field: string | null, change: Change['change'], old: string | null, now: string | null, entity: Change['entity'] = 'company', key = 'https://www.network.com/company/a'): Change => ({ entity, key, change, field, old, new: now });
  expect(inWords([
    c('staff_total', 'changed', '120', '125'),
    c(null, 'added', null, 'https://www.network.com/company/b', 'lookalike'),
    c('staff_total', 'changed', '125', '131'),
    c('followers', 'changed', '10', '11'),
    c('followers', 'changed', '11', '10'),
    c('description', 'changed', 'x'.repeat(80), 'y'),
    c('industries', 'added', null, 'Robotics'),
    c('title', 'changed', 'A', 'B', 'job', 'https://www.network.com/jobs/view/1'),
    c(null, 'removed', 'https://www.network.com/jobs/view/2', null, 'search', 'q_1'),
  ])).toEqual([
    'staff_total 120 -> 131',
    'lookalike added https://www.network.com/company/b',
    `description ${'x'.repeat(59)}… -> y`,
    'industries added Robotics',
    'job https://www.network.com/jobs/view/1 title A -> B',
    'job removed https://www.network.com/jobs/view/2',
  ]);
});
