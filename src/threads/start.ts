/**
 * Starts one of netingest's modules in a worker thread or a child process, the same way whether the process
 * runs under the CLI (tsx registered in-process), `node --import tsx`, vitest, or compiled JavaScript from dist/.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Bundled into dist/ (scripts/build.mjs), this code is .js and each worker or child is an entry beside it,
 * named as its source: no TypeScript loader is needed.
 */
const COMPILED = import.meta.url.endsWith('.js');

/**
 * Starts `module` (a file URL, named by its source: `./export-worker.ts`) in a new worker thread; it reads
 * `data` as workerData.data.
 */
export function startWorker(module: URL, data: unknown, options: Pick<WorkerOptions, 'resourceLimits'> = {}): Worker {
  const entry = entryOf(fileURLToPath(module));
  // From the sources, through tsx's CommonJS hook: see worker-bootstrap.cjs.
  const start = entry.endsWith('.js') ? pathToFileURL(entry) : new URL('./worker-bootstrap.cjs', import.meta.url);
  return new Worker(start, { ...options, workerData: { module: entry, data }, execArgv: [] });
}

/**
 * Starts `module` (a file URL) in a child process, with an IPC channel in V8's serialization (bigints and
 * Buffers pass as they are); its stdout is dropped, its stderr is readable. The child ends itself once this
 * process is gone, even killed with SIGKILL (see child-bootstrap.cjs). For work the parent must be able to
 * kill at once, such as a SQLite statement, which a terminated worker thread finishes anyway (and the process
 * cannot exit before it does).
 */
export function startChild(module: URL): ChildProcess {
  const bootstrap = fileURLToPath(new URL('./child-bootstrap.cjs', import.meta.url));
  return fork(bootstrap, [entryOf(fileURLToPath(module)), String(process.pid)], {
    execArgv: [],
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
}

/**
 * The file a worker or child process loads for `file` (a module named by its source). From the sources, its
 * bundle in dist/ when that build is newer than every source (after `npm run build`, or the test suite's own):
 * the same code, without tsx compiling the module and its imports in each (CPU a start, measured: a child 0.30
 * against 0.20 s, a WAL checkpointer thread 0.13 against 0.06 s). Checked at each start (~1.5 ms), so that a
 * source changed since never runs as its old bundle.
 */
function entryOf(file: string): string {
  if (COMPILED) return file.replace(/\.ts$/, '.js');
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const built = join(root, 'dist', basename(file).replace(/\.ts$/, '.js'));
  return builtAfterSources(root, built) ? built : file;
}

/** The newest modification time of a file under `dir`, in ms. */
function newestUnder(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Whether `builtFile` (a bundle of dist/ under the checkout `root`) is newer than every source: written after the
 * last change to any file under src/, to the build script or to package.json; false if missing. The test suite
 * rebuilds when it is not (test/global-setup.ts); entryOf starts a child process from its bundle when it is.
 */
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
