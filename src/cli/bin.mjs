#!/usr/bin/env node
// Entry point of the `netingest` executable. The sources are TypeScript run through tsx's loader, so a
// fresh clone works right after `npm install` with no build step (job files may be .ts as well).
import { register } from 'tsx/esm/api';

register();
let finished = false;
process.on('exit', (code) => {
  // Node exits 13 when the event loop empties while main() still waits: a bug, never a documented outcome.
  if (!finished && code === 13) {
    process.stderr.write('netingest: internal error: the command stopped while still waiting; the next run resumes\n');
    process.exitCode = 1;
  }
});
const { surviveClosedReader } = await import('./closed-output.ts');
surviveClosedReader(process.stdout);
surviveClosedReader(process.stderr);
const { main } = await import('./main.ts');
process.exitCode = await main(process.argv.slice(2));
finished = true;
