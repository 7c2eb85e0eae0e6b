import { datasetOption, defineCommand, pathCoerce, withApi, withDb } from '../common-options.ts';
import { askLiveBalance } from '../../runner/status-report.ts';
import { describeError, EXIT } from '../exit-codes.ts';
import { combineErrors } from '../../jobs/job-error.ts';
import { formatPlanReport, planJobs } from '../../runner/plan-report.ts';
import { INVALID_OUT_OPTION, loadJobs, writeInvalidOut } from '../job-args.ts';

/** `netingest plan`: what a run would do and cost, with no paid API call (the free balance check only). */
export const planCommand = defineCommand({
  builder: (y) =>
    withApi(withDb(y, 'plan-empty'))
      .positional('jobs', { type: 'string', array: true, describe: 'job files (.json or .ts)' })
      .option('all', { type: 'boolean', default: false, describe: 'plan every job in jobs/' })
      .option('jobs-dir', { type: 'string', default: 'jobs', coerce: pathCoerce('--jobs-dir'), describe: 'folder searched by --all' })
      .option('refresh', { type: 'boolean', default: false, describe: 'as if the run had --refresh' })
      .option('json', { type: 'boolean', default: false, describe: 'print the reports as JSON' })
      .option('invalid-out', INVALID_OUT_OPTION)
      .example('$0 plan jobs/lookalikes.json', 'how many calls and credits the next run needs')
      .example('$0 plan --all --invalid-out bad-rows.csv', 'every row a run cannot use, with its columns and why: bad-rows.<job>.csv per job'),
  run: async (argv, io) => {
    const db = datasetOption(argv.db);
    const { jobs, broken } = await loadJobs(argv.jobs ?? [], argv.all, argv['jobs-dir']);
    // Asked only once some job could be loaded: a plan that fails on its job files sends nothing.
    const live = jobs.length > 0 ? await askLiveBalance({ apiUrl: argv['api-url'], tokenFile: argv['token-file'] }) : null;
    const { reports, planned, unusable: unplanned } = await planJobs(jobs, {
      db,
      refresh: argv.refresh,
      liveBalance: live?.balance ?? null,
      onReport: (r, job) => {
        if (!argv.json) io.stdout.write(formatPlanReport(r, job.credits.reserve));
      },
      onNothingRan: (why) => io.stderr.write(`netingest: ${why}\n`),
    });
    // As a run skips a job whose job file or input file cannot be used, plan reports the others, then those.
    const unusable = [...broken, ...unplanned];
    if (argv['invalid-out'] !== undefined) await writeInvalidOut(planned, argv['invalid-out'], db, io.stderr);
    // Nothing could be planned: the problems are the outcome, as for one bad job.
    if (reports.length === 0) throw combineErrors(unusable);
    if (argv.json) io.stdout.write(JSON.stringify(reports, null, 2) + '\n');
    for (const err of unusable) io.stderr.write(`netingest: ${describeError(err)}\n`);
    return unusable.length > 0 ? EXIT.usage : EXIT.ok;
  },
});
