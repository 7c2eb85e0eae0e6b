/**
 * A setup file for measuring, never part of `npm test`: each test file's CPU seconds, its fork's own and those of
 * the processes it started and waited for (spawned CLIs, workers, statement children), and on a PostgreSQL run the
 * server's CPU so far (all its processes, read from /proc). Wall time misleads on a shared two-core machine; these
 * do not. Written as tab-separated lines to $NETINGEST_CPU_OUT (default /tmp/netingest-cpu.tsv):
 * file, own s, children s, wall s, fork pid, server s so far. Use: npx vitest run --config test/vitest.measure.config.ts
 */
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, inject } from 'vitest';

const OUT = process.env.NETINGEST_CPU_OUT ?? '/tmp/netingest-cpu.tsv';
const TICKS_PER_SECOND = 100;

/** utime+stime and cutime+cstime of a process, in seconds (fields 14-17 of /proc/<pid>/stat). */
function cpuOf(pid: string | number): { own: number; children: number } {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { own: (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND, children: (Number(f[13]) + Number(f[14])) / TICKS_PER_SECOND };
}

/**
 * The CPU of every process of the test cluster, exited backends included; 0 without one. The postmaster is found
 * by its command line (postgres on its port); its live children (backends, checkpointer, WAL writer, autovacuum)
 * by their parent, as they rewrite their command lines into titles that name no port.
 */
function serverCpu(): number {
  const url = inject('pgUrl');
  if (!url) return 0;
  const port = `\0${new URL(url).port}\0`;
  const pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  const postmaster = pids.find((pid) => {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      return cmd.includes('bin/postgres') && cmd.includes(port);
    } catch {
      return false;
    }
  });
  if (!postmaster) return 0;
  let total = 0;
  for (const pid of pids) {
    try {
      if (pid !== postmaster && parentOf(pid) !== postmaster) continue;
      const c = cpuOf(pid);
      total += c.own + c.children;
    } catch {
      // Ended between the listing and the read.
    }
  }
  return total;
}

/** The parent pid of a process (field 4 of /proc/<pid>/stat). */
function parentOf(pid: string): string {
  return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]!;
}

let start = cpuOf('self');
let startedAt = 0;
let file = 'unknown';
// vitest reads a hook's first parameter as a fixtures pattern: it must be destructured, even when unused.
// eslint-disable-next-line no-empty-pattern
beforeAll(({}, suite) => {
  start = cpuOf('self');
  startedAt = Date.now();
  file = (suite as { filepath?: string }).filepath ?? suite.name;
  // The processes this file starts inherit it: process-census.cjs files their CPU under it.
  process.env['NETINGEST_CENSUS_FILE'] = file.replace(/^.*\/test\//, 'test/');
});
afterAll(() => {
  const end = cpuOf('self');
  const cells = [file, end.own - start.own, end.children - start.children, (Date.now() - startedAt) / 1000, process.pid, serverCpu()];
  appendFileSync(OUT, `${cells.map((c) => (typeof c === 'number' && !Number.isInteger(c) ? c.toFixed(2) : c)).join('\t')}\n`);
});
