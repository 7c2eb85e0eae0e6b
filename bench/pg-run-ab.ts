/**
 * The same post lookups on SQLite and on PostgreSQL by two checkouts, in one process, alternating (issue #27 item
 * 4): each round runs `N` lookups on SQLite (this checkout), then on PostgreSQL with checkout A's runJobs and with
 * this one's (B), A and B swapping places every round, each into its own database on one throwaway cluster. Per
 * run: answers/s, this process's CPU and the cluster's an answer; per round, SQLite's time over each's (the
 * bench's ratio, measured in the same minutes). Run: `A=/path/to/other/checkout npx tsx bench/pg-run-ab.ts`
 * (`N`=3000, `ROUNDS`=4).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startSandboxProcess } from '../test/soak/sandbox-process.ts';
import { makeJob, postUrl, writeUrlCsv } from '../test/soak/inputs.ts';
import { createTestDatabase, startPgCluster } from '../test/pg/pg-cluster.ts';
import { PIPELINE_TOKEN } from './pipeline.bench.ts';
import { clusterCpuMs, postmasterOf } from './cpu-meter.ts';
import type { runJobs as RunJobs } from '../src/runner/run-jobs.ts';

const N = Number(process.env['N'] ?? 3000);
const ROUNDS = Number(process.env['ROUNDS'] ?? 4);


const cluster = await startPgCluster();
const postmaster = postmasterOf(cluster.port);
const sandbox = await startSandboxProcess(['--quiet', '--token', PIPELINE_TOKEN, '--credits', '1000000000']);
const dir = mkdtempSync(join(tmpdir(), 'netingest-pg-run-ab-'));
try {
  const load = async (root: string) => (await import(pathToFileURL(join(root, 'src/runner/run-jobs.ts')).href) as { runJobs: typeof RunJobs }).runJobs;
  const sides = [
    { tag: 'sqlite', runJobs: await load(resolve('.')), db: join(dir, 'lite.db'), rates: [] as number[], figures: [] as string[] },
    { tag: 'A', runJobs: await load(resolve(process.env['A'] ?? '.')), db: await createTestDatabase(cluster.url, 'ab_a'), rates: [] as number[], figures: [] as string[] },
    { tag: 'B', runJobs: await load(resolve('.')), db: await createTestDatabase(cluster.url, 'ab_b'), rates: [] as number[], figures: [] as string[] },
  ];
  let csv = 0;
  const run = async (side: (typeof sides)[number], n: number) => {
    const tag = `${side.tag.toLowerCase()}${csv++}`;
    await writeUrlCsv(join(dir, `${tag}.csv`), 'post_url', n, (i) => postUrl(tag, i));
    const job = makeJob({ name: tag, operation: 'post-details', input: { csv: `${tag}.csv`, column: 'post_url' }, rate: { requestsPerMinute: 1e9, concurrency: 16 } }, dir);
    const cpu = process.cpuUsage();
    const server = clusterCpuMs(postmaster);
    const start = performance.now();
    const summary = await side.runJobs({ dbPath: side.db, jobs: [job], api: { baseUrl: sandbox.url, token: PIPELINE_TOKEN } });
    const ms = performance.now() - start;
    if (summary.status !== 'completed') throw new Error(`run ended ${summary.status}`);
    const c = process.cpuUsage(cpu);
    return { perSecond: (n / ms) * 1000, clientUs: (c.user + c.system) / n, serverUs: ((clusterCpuMs(postmaster) - server) * 1000) / n };
  };
  for (const side of sides) await run(side, 1000);
  for (let r = 0; r < ROUNDS; r++) {
    const loadAvg = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
    const lite = await run(sides[0]!, N);
    const order = r % 2 === 0 ? [sides[1]!, sides[2]!] : [sides[2]!, sides[1]!];
    const line = [`round ${r + 1} (load ${loadAvg}): sqlite ${lite.perSecond.toFixed(0)}/s ${lite.clientUs.toFixed(0)} us`];
    for (const side of order) {
      const got = await run(side, N);
      side.rates.push(lite.perSecond / got.perSecond);
      line.push(`${side.tag} ${got.perSecond.toFixed(0)}/s client ${got.clientUs.toFixed(0)} server ${got.serverUs.toFixed(0)} us ratio ${(got.perSecond / lite.perSecond).toFixed(3)}`);
    }
    console.log(line.join('; '));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const side of sides.slice(1)) console.log(`${side.tag}: SQLite's time over its, median ${(1 / median(side.rates)).toFixed(3)}`);
} finally {
  await sandbox.stop();
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
