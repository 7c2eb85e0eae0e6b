// A preload for measuring (NODE_OPTIONS="--require test/measure/process-census.cjs"), never part of `npm test`:
// each Node process writes, as it exits, its CPU seconds and its command line to $NETINGEST_CENSUS_OUT, under the
// test file that was running in its fork (NETINGEST_CENSUS_FILE, set by cpu-per-file.ts and inherited by children).
// A process killed by a signal writes nothing.
const { appendFileSync } = require('node:fs');
const { isMainThread } = require('node:worker_threads');

const out = process.env.NETINGEST_CENSUS_OUT;
if (out && isMainThread) {
  const started = Date.now();
  process.on('exit', () => {
    const { user, system } = process.cpuUsage();
    const argv = process.argv.slice(1).map((a) => a.replace(/^.*\/(dist|src|test|node_modules)\//, '$1/')).join(' ').slice(0, 160);
    const cells = [process.env.NETINGEST_CENSUS_FILE ?? '-', process.pid, process.ppid, ((user + system) / 1e6).toFixed(3), ((Date.now() - started) / 1000).toFixed(2), argv];
    try {
      appendFileSync(out, `${cells.join('\t')}\n`);
    } catch {
      // A process whose working directory or output went away: not counted.
    }
  });
}
