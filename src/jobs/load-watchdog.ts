/**
 * A module job whose own code never returns (`while (true) {}`) blocks the main thread: no timer fires and no signal
 * is handled, so a nightly cron line would leave one more spinning process each night. The main thread beats while a
 * module job loads; a worker thread watches the beats and, once none came for the limit, names the file on stderr
 * and kills the process (exit 137). A load that is slow but not blocked (compiling, awaiting) keeps beating.
 */
import { Worker } from 'node:worker_threads';

// Plain CommonJS evaluated in the worker: no module to find, bundle or compile.
const WATCHDOG = `
const { parentPort, workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
let last = Date.now();
const check = setInterval(() => {
  if (Date.now() - last < workerData.limitMs) return;
  writeSync(2, workerData.message);
  process.kill(process.pid, 'SIGKILL');
}, workerData.everyMs);
parentPort.on('message', (m) => {
  if (m === 'beat') return void (last = Date.now());
  clearInterval(check);
  parentPort.close();
});
`;

/** Watches the load of `displayName`: killed once its main thread gave no sign for `limitMs`. Call the result once loaded. */
export function watchModuleLoad(displayName: string, limitMs: number): () => void {
  const everyMs = Math.max(10, Math.min(1_000, limitMs / 4));
  const message = `netingest: ${displayName}: its code kept the process busy for ${limitMs / 1000} s while loading ` +
    '(code that never returns, such as an endless loop): stopped\n';
  const worker = new Worker(WATCHDOG, { eval: true, workerData: { message, limitMs, everyMs }, execArgv: [] });
  // Never what keeps the process alive; a worker that fails to start only loses the watch.
  worker.unref();
  worker.on('error', () => undefined);
  const beat = setInterval(() => worker.postMessage('beat'), everyMs);
  beat.unref();
  return () => {
    clearInterval(beat);
    worker.postMessage('done');
  };
}
