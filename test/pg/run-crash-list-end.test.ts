/**
 * A run killed (SIGKILL) right after the answer of a page that ends its list: the pages after it were settled in the
 * same transaction, so the next run calls none of them. They used to be settled in a later one; a crash in between
 * left them due, and the next run paid for pages past the end. On both engines.
 */
import { afterEach, expect, it } from 'vitest';
import { job, jobsResponse } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { inProcess, makeWorkspace, spawnCli, type Workspace } from '../support/run-helpers.ts';
import { forEachEngine, type TestDb, type TestEngine } from './engines.ts';

const TOKEN = 'crash-list-end-token-5c1e';
const startFake = useFakeServices();
let ws: Workspace;
afterEach(() => ws.cleanup());

/** search-jobs, pages of 10 by `start`: page 1 lists 7 and ends the list, a 404 past it. Logs the pages asked. */
async function shortListService(asked: number[]): Promise<string> {
  return startFake((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/v1/api/search-jobs') return void res.writeHead(404).end('{}');
    const page = Number(url.searchParams.get('start') ?? 0) / 10 + 1;
    asked.push(page);
    if (page > 1) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jobsResponse([1, 2, 3, 4, 5, 6, 7].map((n) => job(n)))));
  });
}

/**
 * Makes settling a page past the last one slow (a trigger, in the transaction that settles it): time for the test to
 * see page 1 done and kill the run before that transaction commits, were it a later one than page 1's answer.
 */
async function slowPastLastPage(engine: TestEngine, db: TestDb): Promise<void> {
  const when = `NEW.last_error LIKE 'past the last page%'`;
  if (engine.name === 'postgres') {
    await db.run(`CREATE FUNCTION slow_settle() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN PERFORM pg_sleep(1); RETURN NEW; END'`);
    await db.run(`CREATE TRIGGER slow_settle AFTER UPDATE ON tasks FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION slow_settle()`);
    return;
  }
  // SQLite has no sleep: a cross join of 400 rows three times (~1 s).
  await db.run('CREATE TABLE slow_rows (n INTEGER)');
  await db.run('WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 400) INSERT INTO slow_rows SELECT n FROM c');
  await db.run(`CREATE TRIGGER slow_settle AFTER UPDATE ON tasks WHEN ${when} BEGIN SELECT count(*) FROM slow_rows a, slow_rows b, slow_rows c; END`);
}

forEachEngine('a run killed right after a page that ends the list', (engine) => {
  it('leaves no page past the end due: the next run pays for none of them', async () => {
    ws = await makeWorkspace();
    const asked: number[] = [];
    const env = { NETINGEST_API_URL: await shortListService(asked), NETINGEST_API_TOKEN: TOKEN };
    const db = await engine.created(ws.dir);
    await slowPastLastPage(engine, db);
    await ws.write('queries.csv', 'keywords,location\nrobotics engineer,germany\n');
    const file = await ws.job('lists', {
      name: 'lists', operation: 'search-jobs', pages: 3, input: { csv: 'queries.csv' }, rate: { requestsPerMinute: 60_000, concurrency: 1 },
    });
    const pageDone = `SELECT count(*) FROM tasks WHERE job = 'lists' AND page = 1 AND status = 'done'`;

    const victim = spawnCli(['run', file, '--db', db.locator], { cwd: ws.dir, env });
    for (;;) {
      if ((await db.count(pageDone)) === 1) break;
      if (victim.child.exitCode !== null) throw new Error(`the run ended before page 1 was done: ${victim.stderr()}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    victim.child.kill('SIGKILL');
    expect((await victim.done).signal).toBe('SIGKILL');
    // The server ends what the dead run's sessions were doing, as a crash of its host would: nothing of it commits now.
    if (engine.name === 'postgres') await db.run(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'netingest' AND datname = current_database()`);
    expect(asked).toEqual([1]);
    // Page 1's answer and the pages it settled are one: never page 1 done with its later pages still due.
    expect(await db.taskStatuses('lists')).toEqual({ done: 1, not_found: 2 });

    await db.run('DROP TRIGGER slow_settle' + (engine.name === 'postgres' ? ' ON tasks' : ''));
    // The next run is the CLI's code in this process: the killed run is the process under test.
    const next = await inProcess(['run', file, '--db', db.locator], env, { cwd: ws.dir });
    expect(next.code, next.stderr).toBe(0);
    // Before: page 1 done, pages 2 and 3 due: the next run asked page 2 (a 404), a page past the end, paid.
    expect(asked).toEqual([1]);
    expect(await db.taskStatuses('lists')).toEqual({ done: 1, not_found: 2 });
  }, 60_000);
});
