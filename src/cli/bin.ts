#!/usr/bin/env node
// Entry point of the `netingest` executable, bundled into dist/bin.js. It imports only yargs and the
// command list: each command's code is imported when yargs picks it, and tsx only when a .ts job is read.
import { surviveClosedReader } from './closed-output.ts';
import { main } from './main.ts';

let finished = false;
process.on('exit', (code) => {
  // Node exits 13 when the event loop empties while main() still waits: a bug, never a documented outcome.
  if (!finished && code === 13) {
    process.stderr.write('netingest: internal error: the command stopped while still waiting; the next run resumes\n');
    process.exitCode = 1;
  }
});
surviveClosedReader(process.stdout);
surviveClosedReader(process.stderr);
process.exitCode = await main(process.argv.slice(2));
finished = true;
