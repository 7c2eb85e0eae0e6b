/**
 * Starts one of netingest's modules in a worker thread or a child process, the same way whether the process
 * runs under the CLI (tsx registered in-process), `node --import tsx`, vitest, or compiled JavaScript from dist/.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';

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
  if (COMPILED) {
    const compiled = new URL(module.href.replace(/\.ts$/, '.js'));
    return new Worker(compiled, { ...options, workerData: { module: fileURLToPath(compiled), data }, execArgv: [] });
  }
  // From the sources, through tsx's CommonJS hook: see worker-bootstrap.cjs.
  const bootstrap = new URL('./worker-bootstrap.cjs', import.meta.url);
  return new Worker(bootstrap, { ...options, workerData: { module: fileURLToPath(module), data }, execArgv: [] });
}

/**
 * Starts `module` (a file URL) in a child process, with an IPC channel in V8's serialization (bigints and
 * Buffers pass as they are); its stdout is dropped, its stderr is readable. The child ends itself once this
 * process is gone, even killed with SIGKILL (see child-bootstrap.cjs). For work the parent must be able to
 * kill at once, such as a SQLite statement, which a terminated worker thread finishes anyway (and the process
 * cannot exit before it does).
 */
export function startChild(module: URL): ChildProcess {
  const file = fileURLToPath(module);
  const bootstrap = fileURLToPath(new URL('./child-bootstrap.cjs', import.meta.url));
  return fork(bootstrap, [COMPILED ? file.replace(/\.ts$/, '.js') : file, String(process.pid)], {
    execArgv: [],
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
}
