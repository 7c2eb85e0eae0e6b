import { defineCommand } from '../command.ts';
import { withDb } from '../common-options.ts';
import { loadJobs } from '../load-job-args.ts';
import { formatPlanReport, planReport } from '../../runner/plan-report.ts';

/** `netingest plan`: what a run would do and cost, with no API call. */
export const planCommand = defineCommand({
  name: 'plan [jobs..]',
  describe: 'Show what a run would do: valid and invalid rows, duplicates, fresh tasks, calls and credits (no API calls)',
  builder: (y) =>
    withDb(y, { whenMissing: 'plan-empty' })
      .positional('jobs', { type: 'string', array: true, describe: 'job files (.json or .ts)' })
      .option('all', { type: 'boolean', default: false, describe: 'plan every job in jobs/' })
      .option('jobs-dir', { type: 'string', default: 'jobs', normalize: true, describe: 'folder searched by --all' })
      .option('refresh', { type: 'boolean', default: false, describe: 'as if the run had --refresh' })
      .option('json', { type: 'boolean', default: false, describe: 'print the reports as JSON' })
      .example('$0 plan jobs/lookalikes.json', 'how many calls and credits the next run needs'),
  run: async (argv, io) => {
    const jobs = await loadJobs(argv.jobs ?? [], argv.all, argv['jobs-dir']);
    const reports = [];
    for (const job of jobs) {
      const report = await planReport(job, argv.db, argv.refresh);
      reports.push(report);
      if (!argv.json) io.stdout.write(formatPlanReport(report, job.credits.reserve));
    }
    if (argv.json) io.stdout.write(JSON.stringify(reports, null, 2) + '\n');
    return 0;
  },
});
