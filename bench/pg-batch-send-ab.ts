/**
 * A synced batch's sending alone, two checkouts alternating in one process (issue #27 item 4): `ROUNDS` rounds of
 * `BATCHES` batches shaped like a group commit of 6 post answers (BEGIN, 8 inserts of 6 rows into a scratch
 * table, sized like the group's rows and bodies, COMMIT), sent by each checkout's pg-pipeline.ts on its own
 * connection to one throwaway cluster. Per batch: this process's CPU (the server's work is the same on both sides).
 * Run: `A=/path/to/other/checkout npx tsx bench/pg-batch-send-ab.ts` (B is this checkout).
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { startPgCluster } from '../test/pg/pg-cluster.ts';

const ROUNDS = Number(process.env['ROUNDS'] ?? 8);
const BATCHES = Number(process.env['BATCHES'] ?? 500);
const roots = { A: resolve(process.env['A'] ?? '.'), B: resolve('.') };
const body = JSON.stringify({ post: { text: 'A "quoted" line of text, with an apostrophe\'s worth. '.repeat(40), n: 1 } });
const rows = 6;
const insert = `INSERT INTO scratch (a, b, c, d, e, f, g, h) VALUES ${Array.from({ length: rows }, (_, r) => `(${Array.from({ length: 8 }, (_, c) => `$${r * 8 + c + 1}`).join(', ')})`).join(', ')}`;
const values = (i: number) => Array.from({ length: rows }, (_, r) => [i, `url-${i}-${r}`, body, '2026-11-02T08:00:00.000Z', r, null, 'post-details', `key-${i}-${r}`]).flat();

const cluster = await startPgCluster();
try {
  const sides = [];
  for (const [tag, root] of Object.entries(roots)) {
    const { pipelineStatements } = (await import(pathToFileURL(join(root, 'src/store/pg/pg-pipeline.ts')).href)) as typeof import('../src/store/pg/pg-pipeline.ts');
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    await client.query(`CREATE TEMP TABLE scratch (a bigint, b text, c text, d timestamptz, e integer, f text, g text, h text)`);
    sides.push({ tag, client, pipelineStatements, figures: [] as number[] });
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const cpu = process.cpuUsage();
      for (let b = 0; b < BATCHES; b++) {
        await side.pipelineStatements(side.client, ['BEGIN', ...Array.from({ length: 8 }, (_, s) => ({ text: insert, values: values(b * 8 + s) })), 'COMMIT']);
      }
      const c = process.cpuUsage(cpu);
      side.figures.push((c.user + c.system) / BATCHES);
      await side.client.query('TRUNCATE scratch');
    }
  }
  for (const side of sides) console.log(`${side.tag} (${roots[side.tag as 'A']}): client CPU us a batch: ${side.figures.map((f) => f.toFixed(0)).join('  ')}`);
  for (const side of sides) await side.client.end();
} finally {
  await cluster.stop();
}
