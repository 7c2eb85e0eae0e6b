/**
 * CPU time spent by this process and one other (the sandbox), for the benches that compare CPU per answer:
 * on a 2-core machine a side's best rate is bounded by 2 cores over its CPU per answer, whatever its latency.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/** Microseconds of CPU (user + system) used so far by this process and by process `otherPid`. */
export function cpuMicros(otherPid: number): number {
  const own = process.cpuUsage();
  return own.user + own.system + otherProcessMicros(otherPid);
}

function otherProcessMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces: utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / USER_HZ;
}

/** User + system CPU (ms) of the PostgreSQL postmaster `pid` and its children, live and reaped. */
export function clusterCpuMs(pid: number): number {
  let ticks = 0;
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(p) === pid || Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      // gone meanwhile
    }
  }
  return (ticks * 1000) / USER_HZ;
}

/** The pid of the postmaster listening on `port` (a throwaway test cluster's). */
export function postmasterOf(port: number): number {
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      if (cmd[0]?.endsWith('/postgres') && cmd.includes(String(port))) return Number(p);
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no postmaster on port ${port}`);
}

/**
 * CPU (ms, user + system) of each thread of this process so far, by thread id: the main thread is the process's pid;
 * the others are V8's (compilers, GC), libuv's and worker threads.
 */
export function threadCpuMs(): Map<number, number> {
  const out = new Map<number, number>();
  for (const t of readdirSync('/proc/self/task')) {
    try {
      const f = readFileSync(`/proc/self/task/${t}/stat`, 'utf8');
      const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
      out.set(Number(t), ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ);
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

/**
 * The main thread's time on a CPU and its time runnable but waiting for one (ms, /proc schedstat): on two cores shared
 * with the server and the sandbox, the wait is wall time the machine took from the run, not time its code spent.
 */
export function mainThreadSchedMs(): { onCpu: number; waiting: number } {
  const [onCpu, waiting] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ').map(Number);
  return { onCpu: onCpu! / 1e6, waiting: waiting! / 1e6 };
}
