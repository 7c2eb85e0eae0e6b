import { datasetOption, defineCommand, withDb } from '../common-options.ts';
import { formatReprocessReport, rejectedLines, reprocessDatabase } from '../../runner/reprocess.ts';
import { EXIT } from '../exit-codes.ts';

/** `netingest reprocess`: rebuild the normalized tables from the archived raw responses, without API calls. */
export const reprocessCommand = defineCommand({
  builder: (y) => withDb(y).option('json', { type: 'boolean', default: false, describe: 'print the report as JSON' }),
  run: async (argv, io) => {
    const report = await reprocessDatabase(datasetOption(argv.db));
    io.stdout.write(argv.json ? JSON.stringify(report, null, 2) + '\n' : formatReprocessReport(report));
    for (const line of argv.json ? [] : rejectedLines(report)) io.stderr.write(`netingest: ${line}\n`);
    // A body left out is data the user paid for and does not have: cron should see it like a failed item.
    return report.invalid > 0 ? EXIT.failedItems : EXIT.ok;
  },
});
