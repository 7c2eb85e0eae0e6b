/**
 * The suite's temporary files (workspaces, SQLite datasets, the PostgreSQL test cluster) in a folder of its own on
 * /dev/shm where the machine has one: on a virtual disk the writes stalled on writeback (`npm test` 311 against 281 s
 * wall here, ~3% of its CPU). The files are as real; tmpfs only never reaches a disk. Forks and the processes they
 * start inherit TMPDIR; the folder is removed when the run ends.
 */
import { accessSync, chmodSync, constants, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { processExists } from '../src/store/run-lock.ts';

const TMPFS = '/dev/shm';
const PREFIX = 'netingest-test-';

/** Folders of runs killed before their teardown: tmpfs is memory, and the test cluster's data reaches ~2.5 GB. */
function removeAbandoned(): void {
  for (const name of readdirSync(TMPFS)) {
    if (!name.startsWith(PREFIX)) continue;
    const pid = Number.parseInt(name.slice(PREFIX.length), 10);
    if (Number.isInteger(pid) && pid !== process.pid && !processExists(pid)) rmSync(join(TMPFS, name), { recursive: true, force: true });
  }
}

export default function setup(): () => void {
  try {
    accessSync(TMPFS, constants.W_OK);
  } catch {
    return () => undefined;
  }
  removeAbandoned();
  const dir = mkdtempSync(join(TMPFS, `${PREFIX}${process.pid}-`));
  // As /tmp: tests that run a command as another user (uid 65534) make their folders in it.
  chmodSync(dir, 0o1777);
  const before = process.env['TMPDIR'];
  process.env['TMPDIR'] = dir;
  return () => {
    if (before === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = before;
    rmSync(dir, { recursive: true, force: true });
  };
}
