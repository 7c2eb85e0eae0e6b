/**
 * The CLI tests run the built CLI (dist/bin.js), as users run it: it starts in a fraction of the time tsx takes
 * to compile the sources for every spawned process. The build is made here when dist/ is missing or older than
 * any source, so a test never runs yesterday's code.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUILT = join(ROOT, 'dist', 'bin.js');

function newestUnder(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return newest;
}

export default function setup(): void {
  let builtAt = 0;
  try {
    builtAt = statSync(BUILT).mtimeMs;
  } catch {
    // not built yet
  }
  const sourcesAt = Math.max(newestUnder(join(ROOT, 'src')), statSync(join(ROOT, 'scripts', 'build.mjs')).mtimeMs, statSync(join(ROOT, 'package.json')).mtimeMs);
  if (builtAt > sourcesAt) return;
  // The bundles only: the type declarations (tsc, ~20 s of CPU of the ~21 s build) are read by no test here;
  // test/package/ packs the package, whose prepack builds it whole.
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--bundles-only'], { cwd: ROOT, stdio: 'inherit' });
}
