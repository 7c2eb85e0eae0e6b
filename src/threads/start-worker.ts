/**
 * Starts a worker thread running a TypeScript module, the same way whether the process runs under the CLI
 * (tsx registered in-process), `node --import tsx` or vitest: see worker-bootstrap.mjs.
 */
import { Worker } from 'node:worker_threads';

const BOOTSTRAP = new URL('./worker-bootstrap.mjs', import.meta.url);

/** Starts `module` (a file URL) in a new worker thread; it reads `data` as workerData.data. */
export function startWorker(module: URL, data: unknown): Worker {
  return new Worker(BOOTSTRAP, { workerData: { module: module.href, data } });
}
