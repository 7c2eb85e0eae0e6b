/**
 * CPU time spent by this process and one other (the sandbox), for the benches that compare CPU per answer:
 * on a 2-core machine a side's best rate is bounded by 2 cores over its CPU per answer, whatever its latency.
 */
import { readFileSync } from 'node:fs';

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
