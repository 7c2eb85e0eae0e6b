/**
 * A `netingest run` worker on PostgreSQL for the tests: runJobs on the given jobs, with the test's scaled-down
 * shared rate window, claim lease and wait for a server gone away (the CLI's run is the same call with a minute, 60 s
 * and 2 minutes), its summary as JSON on stdout. Prints `started` once its run is open, so the test can kill it
 * mid-way. `hostname` stands for another host.
 */
import os from 'node:os';
import { syncBuiltinESMExports } from 'node:module';
import { loadJob } from '../../../src/jobs/load.ts';
import { runJobs } from '../../../src/runner/run-jobs.ts';

const settings = JSON.parse(process.argv[2]!) as {
  url: string; jobFiles: string[]; cwd: string; apiUrl: string; token: string; leaseMs: number; rateWindowMs: number; runKey?: string;
  hostname?: string; serverBackWithinMs?: number; requestTimeoutMs?: number;
};
// A worker "on another host": the run reads os.hostname() as on any host, and gets this name.
if (settings.hostname) {
  const name = settings.hostname;
  os.hostname = () => name;
  syncBuiltinESMExports();
}
const jobs = await Promise.all(settings.jobFiles.map((f) => loadJob(f, { cwd: settings.cwd })));
process.stdout.write('started\n');
const summary = await runJobs({
  dbPath: settings.url,
  jobs,
  api: { baseUrl: settings.apiUrl, token: settings.token },
  requestTimeoutMs: settings.requestTimeoutMs ?? 10_000,
  lockLeaseMs: settings.leaseMs,
  sharedRateWindowMs: settings.rateWindowMs,
  dbServerBackWithinMs: settings.serverBackWithinMs,
  sharedRunKey: settings.runKey,
});
process.stdout.write(`${JSON.stringify(summary)}\n`);
