import { BOM_OPTION, datasetOption, defineCommand, ESCAPE_FORMULAS_OPTION, outputFileOption, withDb } from '../common-options.ts';
import { QUERY_FORMATS, runQuery } from '../../export/query.ts';
import { UsageError } from '../../errors.ts';
import { plural } from '../../plural.ts';
import { assertHistoryKept, changesStatement, parseChangesSince, type ChangesFilter } from '../../store/history/changes-query.ts';
import { HISTORY_ENTITIES } from '../../store/history/tracking.ts';
import { stderrNotice, withStopSignals } from '../signals.ts';
import { MAX_WIDTH_OPTION, maxColumnWidthOf } from '../number-flags.ts';

/** `netingest changes`: what the history recorded, by default what the last run changed. */
export const changesCommand = defineCommand({
  builder: (y) =>
    withDb(y)
      .option('since', { type: 'string', default: 'last', describe: 'last (what the last run changed, with the runs overlapping it: one night\'s workers), a run id (that run and later ones), or an ISO date or time' })
      .option('job', { type: 'string', describe: "only the changes made by this job's answers" })
      .option('entity', { choices: HISTORY_ENTITIES, describe: 'only changes of one kind of thing' })
      .option('format', { choices: QUERY_FORMATS, describe: 'table, csv or jsonl (default: table on a terminal, else csv)' })
      .option('out', outputFileOption('--out', 'write to this file (csv or jsonl), atomically, instead of stdout'))
      .option('bom', BOM_OPTION)
      .option('escape-formulas', ESCAPE_FORMULAS_OPTION)
      // query's option: the same table encoder, so the same default and meaning.
      .option('max-width', MAX_WIDTH_OPTION)
      .example('$0 changes', 'what last night changed')
      .example('$0 changes --since 2026-11-01 --entity lookalike', 'lookalikes gained and lost since November 1st')
      .example('$0 changes --since 12 --job leads --format jsonl', 'changes of run 12 and later, one job, as JSON Lines'),
  run: async (argv, io) => {
    const filter = changesFilter(argv);
    const sql = changesStatement(filter);
    const maxColumnWidth = maxColumnWidthOf(argv['max-width']);
    const db = datasetOption(argv.db);
    await assertHistoryKept(db, filter);
    const result = await withStopSignals(stderrNotice(io.stderr), (signal) =>
      runQuery({ db, sql, format: argv.format, out: argv.out, bom: argv.bom, escapeFormulas: argv['escape-formulas'], stream: io.stdout, maxColumnWidth, signal }),
    );
    if (result.out !== null) io.stderr.write(`netingest: wrote ${plural(result.rows, 'change')} to ${result.out}\n`);
    return 0;
  },
});

function changesFilter(argv: { since: string; job?: string | undefined; entity?: ChangesFilter['entity'] }): ChangesFilter {
  // An unset variable in a script (`--since "$FROM"`) must not quietly mean the last run.
  if (argv.since.trim() === '') throw new UsageError('--since is empty: give last, a run id or an ISO date or time such as 2026-11-27');
  const since = parseChangesSince(argv.since);
  if (!since) throw new UsageError(`--since ${argv.since}: expected last, a run id or an ISO date or time such as 2026-11-27 or 2026-11-27T06:00Z`);
  if (argv.job !== undefined && (argv.job.trim() === '' || /\p{Cc}/u.test(argv.job))) throw new UsageError('--job: give a job name');
  // --entity is one of HISTORY_ENTITIES: yargs refuses any other value (its choices).
  return { since, job: argv.job, entity: argv.entity };
}
