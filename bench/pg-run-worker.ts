/**
 * One `netingest run` worker of the PostgreSQL bench, in a process of its own: runJobs on the job file given,
 * against the dataset URL given, until SIGTERM (the bench ends the minute) or the job is done.
 */
import { loadJob } from '../src/jobs/load.ts';
import { runJobs } from '../src/runner/run-jobs.ts';

const settings = JSON.parse(process.argv[2]!) as { url: string; jobFile: string; cwd: string; apiUrl: string; token: string };
const controller = new AbortController();
process.on('SIGTERM', () => controller.abort());
const job = await loadJob(settings.jobFile, { cwd: settings.cwd });
const summary = await runJobs({
  dbPath: settings.url,
  jobs: [job],
  api: { baseUrl: settings.apiUrl, token: settings.token },
  signal: controller.signal,
});
process.stdout.write(`${JSON.stringify({ status: summary.status })}\n`);
