/**
 * The server's CPU by cluster process over a timed run (bench/pg-profile.ts `BY_PROCESS=1`): every child of the
 * postmaster sampled from /proc every 50 ms (a short-lived autovacuum worker is counted up to its last sample;
 * what reaped children used past it shows as "reaped"), each backend named by what pg_stat_activity showed it
 * running, through `senderOf`. A backend that ran statements of several senders is named by all of them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';

const USER_HZ = 100;
const SAMPLE_MS = 50;

interface ProcStat { ticks: number; childTicks: number; parent: number; title: string; zombie: boolean }

function readStat(pid: number): ProcStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    return { ticks: Number(f[11]) + Number(f[12]), childTicks: Number(f[13]) + Number(f[14]), parent: Number(f[1]), title, zombie: f[0] === 'Z' };
  } catch {
    return null;
  }
}

/** Children of `postmaster` with their CPU ticks now. */
function children(postmaster: number): Map<number, ProcStat> {
  const out = new Map<number, ProcStat>();
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    const s = readStat(Number(p));
    if (s && s.parent === postmaster) out.set(Number(p), s);
  }
  return out;
}

/**
 * The children and the postmaster's reaped-children time at one moment: taken again while a child is exiting (a
 * zombie, or gone between the reads), whose life would land in the reaped time on one side of the snapshot only.
 */
async function settledChildren(postmaster: number): Promise<{ first: Map<number, ProcStat>; firstSelf: ProcStat }> {
  for (let tries = 0; ; tries += 1) {
    const before = children(postmaster);
    const firstSelf = readStat(postmaster)!;
    const first = children(postmaster);
    const settled = first.size === before.size && [...first].every(([pid, s]) => before.has(pid) && !s.zombie);
    if (settled || tries === 200) return { first, firstSelf };
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A process's kind from its title: "postgres: walwriter", "postgres: autovacuum worker", a backend's "user db host state". */
function kindOf(title: string): string {
  const t = title.replace(/^postgres:\s*/, '');
  if (/^(walwriter|checkpointer|background writer|autovacuum launcher|autovacuum worker|logical replication launcher|stats|archiver)/.test(t)) return t.replace(/\s+(idle|\S+)?$/, '').split(' ').slice(0, 2).join(' ');
  return 'backend';
}

export async function startProcessSampler(postmaster: number, clusterUrl: string, senderOf: (q: string) => string): Promise<{ stop(): Promise<Map<string, number>> }> {
  const { first, firstSelf } = await settledChildren(postmaster);
  // Seeded with the first snapshot: a process reaped before the loop's first sample (the warm-up's backends, whose
  // pool closes just before) had its whole life counted as "reaped" (38-72 us an answer, 5,000 lookups).
  const last = new Map<number, ProcStat>(first);
  const senders = new Map<number, Map<string, number>>();
  const admin = new pg.Client({ connectionString: clusterUrl });
  await admin.connect();
  const adminPid = (await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const [pid, s] of children(postmaster)) last.set(pid, s);
      const { rows } = await admin.query<{ pid: number; query: string; state: string }>('SELECT pid, query, state FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = $1', ['client backend']);
      for (const r of rows) {
        if (!r.query) continue;
        const m = senders.get(r.pid) ?? new Map<string, number>();
        const s = senderOf(r.query);
        m.set(s, (m.get(s) ?? 0) + 1);
        senders.set(r.pid, m);
      }
      await new Promise((r) => setTimeout(r, SAMPLE_MS));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      for (const [pid, s] of children(postmaster)) last.set(pid, s);
      await admin.end();
      const byName = new Map<string, number>();
      const add = (name: string, ticks: number) => byName.set(name, (byName.get(name) ?? 0) + (ticks * 1000) / USER_HZ);
      for (const [pid, s] of last) {
        const used = s.ticks - (first.get(pid)?.ticks ?? 0);
        if (used === 0) continue;
        const kind = kindOf(s.title);
        if (pid === adminPid) add('the profiler\'s own sampling', used);
        else if (kind !== 'backend') add(kind, used);
        else {
          const seen = [...(senders.get(pid) ?? new Map<string, number>())].sort((a, b) => b[1] - a[1]).map(([n]) => n);
          add(`backend: ${seen.join(' + ') || 'nothing seen'}`, used);
        }
      }
      const self = readStat(postmaster)!;
      add('postmaster itself', self.ticks - firstSelf.ticks);
      // A reaped child's whole CPU lands in the postmaster's children's time; what the samples saw of it is counted above.
      const reaped = self.childTicks - firstSelf.childTicks;
      const alive = children(postmaster);
      const seenOfReaped = [...last].filter(([pid]) => !alive.has(pid)).reduce((n, [, s]) => n + s.ticks, 0);
      add('reaped children, past their last sample', Math.max(0, reaped - seenOfReaped));
      return byName;
    },
  };
}
