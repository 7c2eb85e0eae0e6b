/**
 * The history end to end: two nights against the sandbox with the world moved between them (ageDays 1, then
 * 2), every change listed once with the right old and new value, checked against the two worlds' own answers;
 * a third night in the same world lists none; reprocess rebuilds the same history. On both engines.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { reprocessDatabase } from '../../src/runner/reprocess.ts';
import { forEachEngine, type TestDb } from './engines.ts';
import { FAST_RATE, FAST_RETRY, csv, inProcess, makeWorkspace, postUrls, run, type Workspace } from '../support/run-helpers.ts';

const TOKEN = 'history-token-7c1e';
// Four references, eight posts and three searches (were 6, 12 and 5): each kind of change still happens between
// the two worlds (checked below), on a third less work for three nights and three reprocesses.
const REFS = ['acme-robotics', 'globex-logistics', 'initech', 'umbrella-labs'];
const POSTS = postUrls(8);
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function world(ageDays: number): Promise<Sandbox> {
  const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 100_000 }, notFoundRate: 0, ageDays });
  cleanups.push(() => sandbox.stop());
  return sandbox;
}

async function jobsIn(ws: Workspace) {
  await ws.write('leads.csv', csv(['company_url'], REFS.map((r) => [`https://www.network.com/company/${r}`])));
  await ws.write('posts.csv', csv(['post_url'], POSTS.map((u) => [u])));
  await ws.write('queries.csv', csv(['keywords', 'location'], [['robotics engineer', 'germany'], ['data analyst', 'france'], ['sales manager', 'spain']]));
  const common = { rate: FAST_RATE, retry: FAST_RETRY };
  return ws.load(
    await ws.job('lookalikes', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, request: { num: 10 }, pages: 2, ...common }),
    await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, ...common }),
    await ws.job('searches', { operation: 'search-jobs', input: { csv: 'queries.csv' }, pages: 2, ...common }),
  );
}

/** What the sandbox answers for the jobs' requests: lookalikes per reference, staff per company, reactions per post. */
async function answersOf(sandbox: Sandbox) {
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const lookalikes = new Map<string, Set<string>>();
  const staff = new Map<string, number>();
  for (const ref of REFS) {
    const members = new Set<string>();
    for (const page of [1, 2]) {
      const res = await fetch(`${sandbox.url}/v1/api/similar-companies`, { method: 'POST', headers, body: JSON.stringify({ url: `https://www.network.com/company/${ref}`, num: 10, page }) });
      if (res.status !== 200) continue;
      for (const c of ((await res.json()) as { data: { content: Array<{ url: string; staff: { total: number } }> } }).data.content) {
        members.add(c.url);
        staff.set(c.url, c.staff.total);
      }
    }
    lookalikes.set(`https://www.network.com/company/${ref}`, members);
  }
  const reactions = new Map<string, number>();
  for (const url of POSTS) {
    const res = await fetch(`${sandbox.url}/v1/api/post-details?url=${encodeURIComponent(url)}`, { headers });
    const body = (await res.json()) as { PostId: string; engagement: { reactions: number } };
    reactions.set(body.PostId, body.engagement.reactions);
  }
  return { lookalikes, staff, reactions };
}

interface Change {
  run_id: number;
  entity: string;
  key: string;
  change: string;
  field: string | null;
  old: string | null;
  new: string | null;
}

const changesOf = (db: TestDb, runId: number) =>
  db.rows<Change>('SELECT run_id, entity, key, change, field, old, new FROM changes WHERE run_id = ? ORDER BY entity, key, change, field, old, new', runId);

forEachEngine('history', (engine) => {
  it('lists every change of a night once, with its old and new value; an unchanged world lists none; reprocess rebuilds it', async () => {
    const ws = await makeWorkspace();
    cleanups.push(() => ws.cleanup());
    const db = await engine.open(ws.dir);
    const jobs = await jobsIn(ws);
    const [day1, day2] = [await world(1), await world(2)];

    const night1 = await run(ws, day1, TOKEN, jobs, { dbPath: db.locator });
    expect(night1.status).toBe('completed');
    const first = await changesOf(db, night1.runId);
    // The first night adds what it finds, and nothing else.
    expect(new Set(first.map((c) => c.change))).toEqual(new Set(['added']));
    expect(first.filter((c) => c.entity === 'company').length).toBe(await db.count('SELECT count(*) FROM companies'));

    const night2 = await run(ws, day2, TOKEN, jobs, { dbPath: db.locator, refresh: true });
    expect(night2.status).toBe('completed');
    const second = await changesOf(db, night2.runId);
    const [was, now] = [await answersOf(day1), await answersOf(day2)];

    // Lookalikes: exactly the members that left and came, per reference.
    const expectedMembers: string[] = [];
    for (const [ref, before] of was.lookalikes) {
      const after = now.lookalikes.get(ref)!;
      for (const m of before) if (!after.has(m)) expectedMembers.push(`removed ${ref} ${m}`);
      for (const m of after) if (!before.has(m)) expectedMembers.push(`added ${ref} ${m}`);
    }
    const members = second.filter((c) => c.entity === 'lookalike').map((c) => `${c.change} ${c.key} ${c.old ?? c.new}`);
    expect(members.sort()).toEqual(expectedMembers.sort());
    expect(expectedMembers.length).toBeGreaterThan(0);

    // Staff: each company seen both nights whose count moved, once, with both values.
    const expectedStaff = [...now.staff].filter(([url, n]) => was.staff.has(url) && was.staff.get(url) !== n).map(([url, n]) => `${url} ${was.staff.get(url)} -> ${n}`);
    const staff = second.filter((c) => c.field === 'staff_total').map((c) => `${c.key} ${c.old} -> ${c.new}`);
    expect(staff.sort()).toEqual(expectedStaff.sort());
    expect(expectedStaff.length).toBeGreaterThan(0);

    // Reactions: every post whose count rose.
    const expectedReactions = [...now.reactions].filter(([id, n]) => was.reactions.get(id) !== n).map(([id, n]) => `${id} ${was.reactions.get(id)} -> ${n}`);
    const reactions = second.filter((c) => c.field === 'reactions').map((c) => `${c.key} ${c.old} -> ${c.new}`);
    expect(reactions.sort()).toEqual(expectedReactions.sort());
    expect(expectedReactions.length).toBeGreaterThan(0);

    // Search results came and went; nothing is listed twice.
    expect(second.some((c) => c.entity === 'search')).toBe(true);
    const lines = second.map((c) => JSON.stringify(c));
    expect(new Set(lines).size).toBe(lines.length);

    // `netingest changes` lists them: the last run's by default, CSV where the output is no terminal. The
    // command's own code in this process (test/e2e/ spawns the built CLI's `changes`).
    const cli = (...args: string[]) => inProcess(['changes', '--db', db.locator, ...args], {}, { cwd: ws.dir });
    const last = await cli();
    expect(last.code, last.stderr).toBe(0);
    const [header, ...records] = last.stdout.trim().split('\n');
    expect(header).toBe('run_id,at,job,entity,key,change,field,old,new');
    expect(records.length).toBe(second.length);
    const lookalikes = await cli('--entity', 'lookalike', '--format', 'jsonl');
    const parsed = lookalikes.stdout.trim().split('\n').map((l) => JSON.parse(l) as Change & { job: string });
    expect(parsed.length).toBe(members.length);
    expect(parsed.every((c) => c.entity === 'lookalike' && c.job === 'lookalikes' && c.run_id === night2.runId)).toBe(true);
    const both = await cli('--since', String(night1.runId), '--job', 'posts', '--out', 'posts-changes.csv');
    expect(both.code, both.stderr).toBe(0);
    expect(both.stderr).toMatch(/wrote \d+ changes to .*posts-changes\.csv/);
    const written = (await readFile(join(ws.dir, 'posts-changes.csv'), 'utf8')).trim().split('\n').slice(1);
    expect(written.length).toBe([...first, ...second].filter((c) => c.entity === 'post').length);
    expect((await cli('--since', 'yesterday')).code).toBe(2);
    // A misspelt job lists nothing on a night with changes: it is refused, naming the dataset's jobs.
    const misspelt = await cli('--since', String(night1.runId), '--job', 'post');
    expect(misspelt.code).toBe(2);
    expect(misspelt.stderr).toMatch(/--job post: no job of that name in .* \(its jobs: .*lookalikes.*posts/);

    // The same world again: nothing changed, nothing listed.
    const night3 = await run(ws, await world(2), TOKEN, jobs, { dbPath: db.locator, refresh: true });
    expect(night3.status).toBe('completed');
    expect(await changesOf(db, night3.runId)).toEqual([]);

    // Reprocess rebuilds the same history from the raw archive.
    const all = 'SELECT run_id, task_id, at, entity, key, change, field, old, new FROM changes ORDER BY run_id, entity, key, change, field, old, new';
    const before = await db.rows(all);
    await reprocessDatabase(db.locator);
    expect(await db.rows(all)).toEqual(before);
    // Prune drops the superseded bodies (the first nights'), and no change with them; reprocess then replays the
    // kept bodies over the tables and keeps the history whole.
    const bodies = await db.count('SELECT count(*) FROM raw_responses');
    const pruned = await inProcess(['prune', '--db', db.locator, '--keep-days', '0'], {}, { cwd: ws.dir });
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(await db.count("SELECT count(*) FROM netingest_meta WHERE key = 'raw_pruned_at'")).toBe(1);
    expect(await db.count('SELECT count(*) FROM raw_responses')).toBeLessThan(bodies);
    expect(await db.rows(all)).toEqual(before);
    await reprocessDatabase(db.locator);
    expect(await db.rows(all)).toEqual(before);
    // Three nights, six commands and two reprocesses: long on a busy machine, and bounded by its own steps.
  }, 180_000);
});
