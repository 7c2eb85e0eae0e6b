/** How a test starts one of test/pg/workers/*.ts: its bundle from the global setup (global-workers.ts), as plain Node. */
import { join } from 'node:path';
import { inject } from 'vitest';

/** node's arguments to run the worker `script` (e.g. 'run-worker.ts'). */
export function workerArgs(script: string): string[] {
  return [join(inject('pgWorkersDir'), script.replace(/\.ts$/, '.mjs'))];
}
