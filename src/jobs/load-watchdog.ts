/**
 * A module job whose own code never returns (`while (true) {}`) blocks the main thread: no timer fires and no signal
 * is handled, so a nightly cron line would leave one more spinning process each night. A worker thread keeps the time
 * instead and, past the load limit and a grace, names the file on stderr and kills the process (exit 137).
 */
import { Worker } from 'node:worker_threads';

/** Past the load limit, how long the main thread may still be busy before it counts as blocked: at most 5 s. */
const graceMs = (timeoutMs: number) => Math.min(5_000, timeoutMs);

// Plain CommonJS evaluated in the worker: no module to find, bundle or compile.
const WATCHDOG = `
const { parentPort, workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const timer = setTimeout(() => {
  writeSync(2, workerData.message);
  process.kill(process.pid, 'SIGKILL');
}, workerData.afterMs);
parentPort.once('message', () => { clearTimeout(timer); parentPort.close(); });
`;

/** Watches the load of `displayName` (allowed `timeoutMs`); call the result once the load has ended, however. */
export function watchModuleLoad(displayName: string, timeoutMs: number): () => void {
  const afterMs = timeoutMs + graceMs(timeoutMs);
  const message = `netingest: ${displayName}: its code kept the process busy for ${afterMs / 1000} s while loading ` +
    '(code that never returns, such as an endless loop): stopped\n';
  const worker = new Worker(WATCHDOG, { eval: true, workerData: { message, afterMs }, execArgv: [] });
  // Never what keeps the process alive; a worker that fails to start only loses the watch.
  worker.unref();
  worker.on('error', () => undefined);
  return () => worker.postMessage('done');
}
