// The CLI's start, imported by bin.ts once the stop signals are caught: each command's code is imported when yargs picks
// it, tsx only for .ts jobs.
import { setFlagsFromString } from 'node:v8';
import { main } from './main.ts';

// undici's HTTP parser is WebAssembly, which V8 recompiles with TurboFan once warm: ~0.3 s of CPU that a command's
// exit waits for. Liftoff's code kept pace at 1,300 answers/s (bench/README). Set before a connection compiles it.
setFlagsFromString('--liftoff-only');

/**
 * A write's error when its reader is gone: EPIPE (a pipe closed) or EIO (a terminal hung up). Unhandled, it would kill
 * the run mid-way with calls in flight unwritten; losing a reader loses only its text, so the command carries on.
 */
const READER_GONE = new Set(['EPIPE', 'EIO']);
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (!READER_GONE.has(err.code ?? '')) throw err;
  });
}

/** How long a finished command waits for the event loop to empty before it exits all the same. */
const EXIT_GRACE_MS = 1_000;

let finished = false;
process.on('exit', (code) => {
  // Node exits 13 when the event loop empties while main() still waits (a bug, never a documented outcome); node 20
  // passes 0 here and has set process.exitCode.
  if (!finished && (code === 13 || process.exitCode === 13)) {
    process.stderr.write('netingest: internal error: the command stopped while still waiting; the next run resumes\n');
    process.exitCode = 1;
  }
});
process.exitCode = await main(process.argv.slice(2));
finished = true;
// What netingest opened is closed by now; a .ts job's own timer or socket must not keep the process (and a cron or
// systemd oneshot unit) alive after the command is done.
setTimeout(() => process.exit(), EXIT_GRACE_MS).unref();
