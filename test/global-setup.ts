/**
 * The CLI tests run the built CLI (dist/bin.js), as users run it: it starts in a fraction of the time tsx takes
 * to compile the sources for every spawned process. The build is made here when dist/ is missing or older than
 * any source, so a test never runs yesterday's code.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtAfterSources } from '../src/threads/start.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUILT = join(ROOT, 'dist', 'bin.js');

export default function setup(): void {
  // The same rule by which a statement's child process, started from the sources, loads its bundle.
  if (builtAfterSources(ROOT, BUILT)) return;
  // The bundles only: the type declarations (tsc, ~20 s of CPU of the ~21 s build) are read by no test here;
  // test/package/ packs the package, whose prepack builds it whole.
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--bundles-only'], { cwd: ROOT, stdio: 'inherit' });
}
