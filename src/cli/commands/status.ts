import { z } from 'zod';
import { datasetOption, defineCommand, withApi, withDb } from '../common-options.ts';
import { formatStatus, formatStatusDrift, statusReport } from '../../runner/status-report.ts';
import { numberFlag, numberOption } from '../number-flags.ts';
import { terminalSafeJson } from '../../text-width.ts';

// A negative LIMIT means "no limit" to SQLite, and a fraction or NaN fails the query as an internal error.
const RUNS_RULE = z.number().int().min(0).max(1_000_000);
const DEFAULT_RUNS = 10;

/** `netingest status`: what the last runs did and what is left. */
export const statusCommand = defineCommand({
  builder: (y) =>
    withApi(withDb(y))
      .option('runs', numberOption('how many recent runs to list', DEFAULT_RUNS))
      .option('json', { type: 'boolean', default: false, describe: 'print the status as JSON' })
      .option('drift', { type: 'boolean', default: false, describe: "print only the last run's answer drift, every line (a run's summary shows the first 5)" }),
  run: async (argv, io) => {
    const runs = numberFlag('--runs', argv.runs, RUNS_RULE) ?? DEFAULT_RUNS;
    const full = await statusReport({ db: datasetOption(argv.db), runs, apiUrl: argv['api-url'], tokenFile: argv['token-file'] });
    if (argv.json) io.stdout.write(terminalSafeJson(JSON.stringify(argv.drift ? { drift: full.drift } : full, null, 2)) + '\n');
    else io.stdout.write(argv.drift ? formatStatusDrift(full) : formatStatus(full, runs));
    return 0;
  },
});
