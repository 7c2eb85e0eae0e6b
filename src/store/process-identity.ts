/**
 * Which process a pid names, as far as this host can tell: a pid alone is reused (after a crash, PID 1 in every
 * container), so a run lock records its holder's start too, read where Linux keeps it.
 */
import { readFileSync } from 'node:fs';

/** What /proc says of a live process. */
export interface ProcessFacts {
  /** The boot's id and the process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat). */
  start: string;
  /** Its state letter (field 3): `T` stopped (Ctrl-Z, SIGSTOP), `t` stopped by a debugger. */
  state: string;
}

/** The facts of process `pid`, or null where /proc cannot tell (no such process, or not Linux). */
export function processFacts(pid: number): ProcessFacts | null {
  const stat = readProc(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // Field 2, the command name, is in parentheses and may hold spaces or parentheses itself: count after the last.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const startTicks = fields[19];
  if (!state || !startTicks || !/^\d+$/.test(startTicks)) return null;
  return { start: `${bootId()}:${startTicks}`, state };
}

let cachedBootId: string | undefined;

/** The kernel's id of this boot: start times count from the boot, so two boots' times cannot be compared. */
function bootId(): string {
  return (cachedBootId ??= readProc('/proc/sys/kernel/random/boot_id')?.trim() ?? '');
}

/** A /proc file's text, or null where it cannot be read (no such process, or not Linux). */
function readProc(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}
