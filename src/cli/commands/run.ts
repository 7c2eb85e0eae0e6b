import { defineCommand } from '../command.ts';
import { withApi, withDb, withLogFormat } from '../common-options.ts';
import { resolveApiConfig } from '../../api/config.ts';
import { loadJobs } from '../load-job-args.ts';
import { runJobs } from '../../runner/run-jobs.ts';
import { createLogger } from '../../runner/logger.ts';
import { withStopSignals } from '../signals.ts';
import { exitCodeForRun, formatRunSummary } from '../format-summary.ts';

/** `netingest run`: the run engine from the command line. */
export const runCommand = defineCommand({
  name: 'run [jobs..]',
  describe: 'Run jobs: read their inputs, call the API for every due task, store the results',
  builder: (y) =>
    withLogFormat(withApi(withDb(y)))
      .positional('jobs', { type: 'string', array: true, describe: 'job files (.json or .ts)' })
      .option('all', { type: 'boolean', default: false, describe: 'run every job in jobs/' })
      .option('jobs-dir', { type: 'string', default: 'jobs', describe: 'folder searched by --all', normalize: true })
      .option('concurrency', { type: 'number', describe: "override every job's rate.concurrency" })
      .option('rate', { type: 'number', describe: "override every job's rate.requestsPerMinute" })
      .option('max-credits', { type: 'number', describe: "override every job's credits.maxPerRun" })
      .option('reserve', { type: 'number', describe: "override every job's credits.reserve" })
      .option('refresh', { type: 'boolean', default: false, describe: 'call again tasks done within refreshAfterDays' })
      .option('json', { type: 'boolean', default: false, describe: 'print the summary as JSON on stdout' })
      .example('$0 run jobs/lookalikes.json', 'run one job')
      .example('$0 run --all --db data/nightly.db', 'run every job in jobs/ (nightly cron)'),
  run: async (argv, io) => {
    const jobs = await loadJobs(argv.jobs ?? [], argv.all, argv['jobs-dir']);
    const api = resolveApiConfig({ apiUrl: argv['api-url'], tokenFile: argv['token-file'] });
    const tty = Boolean(io.stderr.isTTY);
    const logger = createLogger({
      stream: io.stderr,
      format: argv['log-format'],
      level: tty && argv['log-format'] === 'text' ? 'warn' : 'info',
      secrets: [api.token],
    });
    const summary = await withStopSignals(
      (sig) => logger.warn('signal received: finishing calls in flight (send it again to stop at once)', { signal: sig }),
      (signal) =>
      runJobs({
        dbPath: argv.db,
        jobs,
        api,
        overrides: { concurrency: argv.concurrency, requestsPerMinute: argv.rate, maxCredits: argv['max-credits'], reserve: argv.reserve },
        refresh: argv.refresh,
        signal,
        logger,
        progressStream: io.stderr,
      }),
    );
    const text = argv.json ? JSON.stringify(summary, null, 2) + '\n' : formatRunSummary(summary);
    io.stdout.write(text.split(api.token).join('[redacted]'));
    return exitCodeForRun(summary);
  },
});
