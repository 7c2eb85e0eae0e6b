/**
 * The PostgreSQL writer alone, two checkouts alternating in one process (issue #27 item 4): `ROUNDS` rounds of
 * `GROUPS` groups of `SIZE` post answers (sandbox-sized bodies) written by each checkout's createPgGroupCommit as
 * the run's writer sends them (each in its own transaction, started as the one before sent its COMMIT), each into
 * its own migrated database on one throwaway cluster. Per answer: this process's CPU, the writer backend's CPU
 * (/proc), wall time. Run: `A=/path/to/other/checkout npx tsx bench/pg-writer-ab.ts` (B is this checkout; both must
 * have `start`, the writer's pipeline of 2026-11-29).
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createTestDatabase, startPgCluster } from '../test/pg/pg-cluster.ts';
import { postRequest, postResponse } from '../test/support/db-fixtures.ts';
import { readOperationAnswer } from '../test/support/store-helpers.ts';
import { requestKeyOf } from '../src/operations/index.ts';
import type { OutcomeOp } from '../src/store/outcome-ops.ts';

const ROUNDS = Number(process.env['ROUNDS'] ?? 6);
const GROUPS = Number(process.env['GROUPS'] ?? 150);
/** Answers a group: `SIZE`, or with VARY=1 from 1 to 2 x SIZE - 1 by turns (the run's groups vary). */
const SIZE = Number(process.env['SIZE'] ?? 6);
const sizeOf = (g: number) => (process.env['VARY'] ? 1 + ((g * 7) % (2 * SIZE - 1)) : SIZE);
const AT = '2026-11-02T08:00:00.000Z';
const roots = { A: resolve(process.env['A'] ?? '.'), B: resolve('.') };

function ops(first: number, size: number): OutcomeOp[] {
  return Array.from({ length: size }, (_, i): OutcomeOp => {
    const taskId = first + i;
    const id = `activity-7${String(100000000000000000 + taskId)}`;
    const request = { ...postRequest, postUrl: `https://network.com/posts/p_${id}` };
    const text = `Post ${taskId}: ${'A "quoted" line of text, with \\ and an apostrophe\'s worth. '.repeat(60)}`;
    const response = postResponse({ PostId: id, post: { ...postResponse().post, text_content: text } });
    const { answer, setAside } = readOperationAnswer('post-details', response);
    const call = { runId: 1, taskId, operation: 'post-details', method: 'GET', path: `/p/${taskId}`, status: 200, errorCode: null, latencyMs: 1, totalCredits: 1e9, creditsUsed: taskId, creditsRemaining: 1e9 - taskId, at: AT };
    return { kind: 'success', taskId, operation: 'post-details', requestKey: requestKeyOf(request), request, body: JSON.stringify(response), answer, setAside, call, attempts: 1, at: AT };
  });
}

const cpuOf = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};

const cluster = await startPgCluster();
try {
  const sides = [];
  for (const [tag, root] of Object.entries(roots)) {
    const imp = async <T>(p: string) => (await import(pathToFileURL(join(root, p)).href)) as T;
    const { openPgStore } = await imp<typeof import('../src/store/pg/open.ts')>('src/store/pg/open.ts');
    const { createPgGroupCommit } = await imp<typeof import('../src/store/pg/pg-group-commit.ts')>('src/store/pg/pg-group-commit.ts');
    const store = await openPgStore(await createTestDatabase(cluster.url, `ab${tag.toLowerCase()}`));
    const total = ROUNDS * GROUPS * 2 * SIZE;
    await store.pool.query(`INSERT INTO tasks (id, job, operation, input_key, page, request_json, status, attempts, created_at, updated_at)
      SELECT i, 'j', 'post-details', 'k' || i, 1, '{}', 'pending', 0, $1, $1 FROM generate_series(1, $2::int) i`, [AT, total + 1000]);
    await store.pool.query('INSERT INTO runs (id, started_at, status) VALUES (1, $1, $2) ON CONFLICT DO NOTHING', [AT, 'running']).catch(() => undefined);
    const client = await store.pool.connect();
    // The run's writer's connection is in pipeline mode: a group's statements go without waiting for the one before.
    (client as unknown as { pipeline: boolean }).pipeline = true;
    const pid = (await client.query<{ p: number }>('SELECT pg_backend_pid() AS p')).rows[0]!.p;
    sides.push({ tag, store, client, pid, commit: createPgGroupCommit(1), next: 1, figures: [] as string[] });
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const sizes = Array.from({ length: GROUPS }, (_, g) => sizeOf(g));
      const groups = sizes.map((size, g) => side.commit.plan(ops(side.next + sizes.slice(0, g).reduce((a, b) => a + b, 0), size)));
      const n = sizes.reduce((a, b) => a + b, 0);
      side.next += n;
      const cpu = process.cpuUsage();
      const server = cpuOf(side.pid);
      const start = performance.now();
      let last: Promise<void> | null = null;
      for (const group of groups) {
        const started = side.commit.start(side.client, group);
        const read = await started.reads;
        await last;
        last = (await started.commit(read)).committed;
      }
      await last;
      const c = process.cpuUsage(cpu);
      side.figures.push(`${((c.user + c.system) / n).toFixed(0)}/${(((cpuOf(side.pid) - server) * 1000) / n).toFixed(0)}/${(((performance.now() - start) * 1000) / n).toFixed(0)}`);
    }
  }
  for (const side of sides) console.log(`${side.tag} (${roots[side.tag as 'A']}): client/server CPU/wall us an answer: ${side.figures.join('  ')}`);
  for (const side of sides) {
    (side.client as unknown as { pipeline: boolean }).pipeline = false;
    side.client.release();
    await side.store.close();
  }
} finally {
  await cluster.stop();
}
