/**
 * Starts a worker thread running one of netingest's modules, the same way whether the process runs under the
 * CLI (tsx registered in-process), `node --import tsx`, vitest, or compiled JavaScript from dist/.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';

const BOOTSTRAP = new URL('./worker-bootstrap.cjs', import.meta.url);
/**
 * Bundled into dist/ (scripts/build.mjs), this code is .js and each worker is an entry beside it, named as its
 * source: no TypeScript loader is needed.
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
  return new Worker(BOOTSTRAP, { ...options, workerData: { module: fileURLToPath(module), data }, execArgv: [] });
}
