/**
 * Starts a worker thread running a TypeScript module, the same way whether the process runs under the CLI
 * (tsx registered in-process), `node --import tsx` or vitest: see worker-bootstrap.cjs.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';

const BOOTSTRAP = new URL('./worker-bootstrap.cjs', import.meta.url);

/** Starts `module` (a file URL) in a new worker thread; it reads `data` as workerData.data. */
export function startWorker(module: URL, data: unknown, options: Pick<WorkerOptions, 'resourceLimits'> = {}): Worker {
  return new Worker(BOOTSTRAP, { ...options, workerData: { module: fileURLToPath(module), data }, execArgv: [] });
}
