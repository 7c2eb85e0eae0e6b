/**
 * `plan` on a database in a folder the user cannot write, which it reads as an immutable file (see
 * src/store/read-without-shm.ts): a run that writes the file while plan reads it must fail plan with DB_CHANGED,
 * not let it print a report made of half of each version. Runs plan as uid 65534 through setpriv, as
 * read-unwritable-folder.test.ts does for query and export.
 *
 * plan opens the database (the watch takes the file's state then) before it opens the job's input, and checks
 * the file after the input's last row. So the test stops the process (SIGSTOP) while the input is half read,
 * changes the database, and lets it go on: no hook in the command, no race.
 *
 * `status` has no such test: it reads nothing but the database, synchronously from the open to the check, and
 * prints only after the check, so nothing outside the process can tell when it is inside that window, nor hold
 * it there, without a hook.
 */
import { describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, readdirSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, canRunAsOtherUser, useUnwritableFolder, writeAsARunWould } from './read-unwritable-helpers.ts';
import { waitFor } from '../support/run-helpers.ts';

/** Rows of the job's input: over a megabyte, which plan reads in many 64 KiB chunks, for a second or so. */
const INPUT_ROWS = 30_000;

// Companies for writeAsARunWould to rewrite: a change of the file's pages, as a run makes.
const ro = useUnwritableFolder('netingest-ro-plan-', 2_000);

/**
 * Stops `pid` (SIGSTOP) at a moment it has `file` open and has not read it to the end: then it has not left the
 * loop that reads it. Returns false if the process ended first.
 */
async function stopWhileReading(pid: number, file: string, ended: () => boolean): Promise<boolean> {
  const size = statSync(file).size;
  // Within the test's time: a poll left running after a failure would go on in this fork (isolate: false), where a
  // later file's fake timers take it up as an endless timer loop.
  const deadline = Date.now() + 20_000;
  while (!ended()) {
    if (Date.now() > deadline) throw new Error(`process ${pid} was neither stopped mid-read nor ended within 20 s`);
    if (fdsOn(pid, file).length > 0) {
      process.kill(pid, 'SIGSTOP');
      // T: stopped by the signal; t: the same under a tracer (strace, a debugger).
      await waitFor(() => ended() || /^\d+ \(.*\) [Tt] /.test(readProc(`/proc/${pid}/stat`)), deadline - Date.now(), `process ${pid} to stop`);
      // Stopped, its file offsets hold still. The input stream reads with read(2), which moves the offset: one
      // short of the end means rows are left. The header peek reads with pread(2): offset 0, before the end too.
      const offsets = fdsOn(pid, file).map((fd) => Number(/^pos:\s+(\d+)/m.exec(readProc(`/proc/${pid}/fdinfo/${fd}`))?.[1] ?? size));
      if (offsets.some((pos) => pos < size)) return true;
      process.kill(pid, 'SIGCONT');
    }
    await sleep(1);
  }
  return false;
}

/** The fds of process `pid` open on `file`; [] once it is gone. */
function fdsOn(pid: number, file: string): string[] {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  return fds.filter((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === file;
    } catch {
      return false;
    }
  });
}

function readProc(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!canRunAsOtherUser)(
  'plan on a database in a folder the user cannot write (runs it as uid 65534: needs root and setpriv, skipped otherwise)',
  () => {
    it('a database that changes while plan reads it fails with DB_CHANGED and prints no report', async () => {
      const db = ro.unwritableCopy();
      const jobs = join(ro.dir, 'jobs');
      mkdirSync(jobs, { mode: 0o755 });
      const csv = join(jobs, 'leads.csv');
      const rows = Array.from({ length: INPUT_ROWS }, (_, i) => `https://www.network.com/company/lead-${i}\n`);
      writeFileSync(csv, `company_url\n${rows.join('')}`);
      const jobFile = join(jobs, 'lookalikes.json');
      const job = JSON.parse(readFileSync(join(ROOT, 'jobs/lookalikes.json'), 'utf8'));
      writeFileSync(jobFile, JSON.stringify({ ...job, input: { csv, column: 'company_url' } }));

      const child = ro.spawnAsOtherUser([ro.cli.bin, 'plan', jobFile, '--db', db]);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      let ended = false;
      const exited = new Promise<number | null>((resolve) =>
        child.on('close', (code) => {
          ended = true;
          resolve(code);
        }),
      );
      // setpriv execs node in place: child.pid is the command's process.
      try {
        const stopped = await stopWhileReading(child.pid!, csv, () => ended);
        expect(stopped, `plan ended before it could be stopped mid-read; stderr: ${stderr}`).toBe(true);
        writeAsARunWould(db);
      } finally {
        if (!ended) process.kill(child.pid!, 'SIGCONT');
      }
      expect(await exited).toBe(1);
      // The report would be presented as complete: none is printed.
      expect(stdout).toBe('');
      expect(stderr).toMatch(/changed while this command read it.*run the command again \[DB_CHANGED\]\n$/);
    });
  },
);
