#!/usr/bin/env node
// Entry point of the `netingest` executable, bundled into dist/bin.js. It imports only yargs and the
// command list: each command's code is imported when yargs picks it, and tsx only when a .ts job is read.
import { main } from './main.ts';

/**
 * What a write answers when its reader is gone: EPIPE for a pipe (`netingest run | head`, a `| tee` killed by
 * the same Ctrl-C), EIO for a terminal that hung up (an ssh session that dropped: the run goes on after its
 * SIGHUP to store its answers in flight, see signals.ts). Node would emit it as an 'error' event nobody
 * handles, killing the process mid-run (calls in flight unwritten, its `runs` row left running, exit code 1).
 * Losing a reader loses only the text it would have read: the database holds the run's outcome, so the
 * command carries on and ends with its own exit code. Any other error stays fatal, as Node makes it.
 */
const READER_GONE = new Set(['EPIPE', 'EIO']);
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (!READER_GONE.has(err.code ?? '')) throw err;
  });
}

let finished = false;
process.on('exit', (code) => {
  // Node exits 13 when the event loop empties while main() still waits: a bug, never a documented outcome.
  if (!finished && code === 13) {
    process.stderr.write('netingest: internal error: the command stopped while still waiting; the next run resumes\n');
    process.exitCode = 1;
  }
});
process.exitCode = await main(process.argv.slice(2));
finished = true;
