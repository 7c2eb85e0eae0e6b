/**
 * Whether dist/ holds a build of the sources as they are now: its bundles written after the last change to any
 * file under src/, to the build script or to package.json. The test suite rebuilds when it does not
 * (test/global-setup.ts); threads/start.ts, running from the sources, starts a child process from its bundle
 * when it does.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The newest modification time of a file under `dir`, in ms. */
function newestUnder(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Whether `builtFile` (a bundle of dist/ under the checkout `root`) is newer than every source; false if missing. */
export function builtAfterSources(root: string, builtFile: string): boolean {
  try {
    const sourcesAt = Math.max(
      newestUnder(join(root, 'src')),
      statSync(join(root, 'scripts', 'build.mjs')).mtimeMs,
      statSync(join(root, 'package.json')).mtimeMs,
    );
    return statSync(builtFile).mtimeMs > sourcesAt;
  } catch {
    // No build yet, or no sources beside it (an installed package runs its build, never this).
    return false;
  }
}
