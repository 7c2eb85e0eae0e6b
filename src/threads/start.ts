/** Starts a module in a worker thread or child process alike under tsx (CLI, vitest) or compiled in dist/. */
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { fileURLToPath, pathToFileURL } from 'node:url';

// Bundled into dist/, this code is .js and each worker or child an entry beside it, named as its source: no tsx.
const COMPILED = import.meta.url.endsWith('.js');

/** Starts `module` (a file URL named by its source: `./export-worker.ts`) in a worker; it reads workerData.data. */
export function startWorker(module: URL, data: unknown, options: Pick<WorkerOptions, 'resourceLimits'> = {}): Worker {
  const entry = entryOf(fileURLToPath(module));
  // From the sources, through tsx's CommonJS hook: see worker-bootstrap.cjs.
  const start = entry.endsWith('.js') ? pathToFileURL(entry) : new URL('./worker-bootstrap.cjs', import.meta.url);
  return new Worker(start, { ...options, workerData: { module: entry, data }, execArgv: [] });
}

/**
 * Starts `module` in a child process (V8-serialized IPC, stdout dropped) that ends itself once this process is gone,
 * even by SIGKILL. For work the parent must kill at once, like a SQLite statement, which a terminated worker finishes.
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
 * The file a worker or child loads for `file`: its dist/ bundle when newer than every source (spares tsx compiling it
 * in each), else the source. Checked at each start, so that a source changed since never runs as its old bundle.
 */
function entryOf(file: string): string {
  if (COMPILED) return file.replace(/\.ts$/, '.js');
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const built = join(root, 'dist', basename(file).replace(/\.ts$/, '.js'));
  return builtAfterSources(root, built) ? built : file;
}

/** The newest modification time of a file under `dir`, in ms. */
function newestUnder(dir: string): number {
  const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => !entry.isDirectory());
  return Math.max(0, ...files.map((entry) => statSync(join(entry.parentPath, entry.name)).mtimeMs));
}

/** Whether `builtFile` (a dist/ bundle under `root`) is newer than src/, the build script and package.json. */
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
