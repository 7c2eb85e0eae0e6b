import { existsSync } from 'node:fs';
import { defineCommand } from '../command.ts';
import { withDb } from '../common-options.ts';
import { openDatabase } from '../../store/open.ts';
import { acquireRunLock } from '../../store/run-lock.ts';
import { UsageError } from '../../errors.ts';
import { reprocess, type ReprocessReport } from '../../runner/reprocess.ts';
import { EXIT } from '../exit-codes.ts';

/** `netingest reprocess`: rebuild the normalized tables from the archived raw responses, without API calls. */
export const reprocessCommand = defineCommand({
  name: 'reprocess',
  describe: 'Rebuild companies, posts and jobs from the stored raw responses (no API calls, no credits)',
  builder: (y) =>
    withDb(y, { whenMissing: 'refuse' }).option('json', { type: 'boolean', default: false, describe: 'print the report as JSON' }),
  run: async (argv, io) => {
    if (!existsSync(argv.db)) throw new UsageError(`no database at ${argv.db}: nothing to reprocess (see --db)`);
    const database = openDatabase(argv.db);
    try {
      // A run writing at the same time would interleave with the rebuild; take the run lock like a run does.
      const lock = acquireRunLock(database);
      let report: ReprocessReport;
      try {
        report = reprocess(database);
      } finally {
        lock.release();
      }
      io.stdout.write(argv.json ? JSON.stringify(report, null, 2) + '\n' : formatReport(report));
      for (const r of argv.json ? [] : report.rejected) {
        const task = r.taskId === null ? '' : `, task ${r.taskId}`;
        io.stderr.write(`netingest: raw response ${r.id} (${r.operation} ${r.requestKey}${task}) skipped: ${r.reason}\n`);
      }
      // A body left out is data the user paid for and does not have: cron should see it like a failed item.
      return report.invalid > 0 ? EXIT.failedItems : EXIT.ok;
    } finally {
      database.close();
    }
  },
});

function formatReport(r: ReprocessReport): string {
  const lines = [
    `Reprocessed ${r.responses} raw responses: ${r.replayed} replayed, ${r.invalid} skipped as invalid.`,
    r.rebuiltFromScratch
      ? `Normalized rows: ${r.rowsDeleted} deleted, then ${r.rowsWritten} row writes (inserts and updates: a row stored again counts again).`
      : `Normalized rows: ${r.rowsWritten} row writes over the tables as they were (prune dropped superseded bodies, so the rows built from them were kept, not rebuilt).`,
  ];
  if (r.recovered > 0) {
    lines.push(`Recovered ${r.recovered} bodies kept from wrong-shape answers: they validate now; ${r.tasksRecovered} failed tasks set done, no call made.`);
  }
  if (r.stillRejected > 0) {
    lines.push(`${r.stillRejected} bodies kept from wrong-shape answers still do not validate: their tasks stay failed (listed on stderr).`);
  }
  if (r.invalid > r.rejected.length) lines.push(`(${r.invalid - r.rejected.length} more invalid responses not listed)`);
  return lines.join('\n') + '\n';
}
