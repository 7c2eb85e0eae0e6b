import { z } from 'zod';
import { datasetOption, defineCommand, outputFileOption, withApi, withDb } from '../common-options.ts';
import { numberFlag, numberOption } from '../number-flags.ts';
import { UsageError } from '../../errors.ts';
import { gatherFigures, REPORT_DEFAULTS, writeReport } from '../../report/write-report.ts';

const DAYS_RULE = z.number().int().min(1).max(3660);
const FORECAST_RULE = z.number().int().min(1).max(366);
const RATE_RULE = z.number().positive();

/** `netingest report`: one self-contained HTML page of the last runs, or its figures as JSON. */
export const reportCommand = defineCommand({
  builder: (y) =>
    withApi(withDb(y))
      .option('out', { ...outputFileOption('--out', 'the HTML file to write (replaced atomically)'), defaultDescription: REPORT_DEFAULTS.outFile })
      .option('days', numberOption('draw the runs of the last this many days', REPORT_DEFAULTS.days))
      .option('forecast-days', numberOption('days of tasks coming due to show', REPORT_DEFAULTS.forecastDays))
      .option('rate', numberOption('the calls per minute assumed for a run that did not record its jobs\' rates (made by an earlier release)', REPORT_DEFAULTS.configuredPerMinute))
      .option('json', { type: 'boolean', default: false, describe: 'print the figures as JSON instead of writing the page' })
      .example('netingest report --out /var/www/netingest/report.html', 'the page after a nightly run')
      .example('netingest report --days 365 --json', "a year's figures as JSON"),
  run: async (argv, io) => {
    const options = {
      db: datasetOption(argv.db),
      days: numberFlag('--days', argv.days, DAYS_RULE) ?? REPORT_DEFAULTS.days,
      forecastDays: numberFlag('--forecast-days', argv['forecast-days'], FORECAST_RULE) ?? REPORT_DEFAULTS.forecastDays,
      configuredPerMinute: numberFlag('--rate', argv.rate, RATE_RULE, 'rate.requestsPerMinute') ?? REPORT_DEFAULTS.configuredPerMinute,
      apiUrl: argv['api-url'],
      tokenFile: argv['token-file'],
    };
    if (argv.json) {
      // The figures go to stdout: an --out would be left unwritten without a word.
      if (argv.out !== undefined) throw new UsageError(`--json prints the figures on stdout: leave out --out (or redirect: > ${argv.out})`);
      const { figures } = await gatherFigures(options);
      io.stdout.write(JSON.stringify(figures, null, 2) + '\n');
      return 0;
    }
    const written = await writeReport({ ...options, outFile: argv.out ?? REPORT_DEFAULTS.outFile });
    io.stdout.write(`Report written: ${written.path} (${Math.ceil(written.bytes / 1024)} KB)\n${written.figures.headline.action}\n`);
    if (written.notRecorded) io.stderr.write(`warning: the report's path is not remembered for \`netingest status\`: ${written.notRecorded}\n`);
    return 0;
  },
});
