import { BOM_OPTION, datasetOption, defineCommand, ESCAPE_FORMULAS_OPTION, withDb } from '../common-options.ts';
import { QUERY_FORMATS, runQuery } from '../../export/query.ts';
import { stderrNotice, withStopSignals } from '../signals.ts';
import { MAX_WIDTH_OPTION, maxColumnWidthOf, sqlTimeoutMs, TIMEOUT_OPTION } from '../number-flags.ts';

/** `netingest query`: one read-only SQL statement, as a table on a terminal and CSV otherwise. */
export const queryCommand = defineCommand({
  builder: (y) =>
    withDb(y)
      .positional('sql', { type: 'string', demandOption: true, describe: 'a SELECT (or WITH, VALUES, EXPLAIN, reporting PRAGMA)' })
      .option('format', { choices: QUERY_FORMATS, describe: 'table, csv or jsonl (default: table on a terminal, else csv)' })
      .option('bom', BOM_OPTION)
      .option('escape-formulas', ESCAPE_FORMULAS_OPTION)
      .option('timeout', TIMEOUT_OPTION)
      .option('max-width', MAX_WIDTH_OPTION)
      .example(`$0 query "SELECT reference_url, company_name, best_grade FROM v_lookalikes LIMIT 20"`, 'look around')
      .example(`$0 query "SELECT job, status, count(*) FROM tasks GROUP BY 1, 2" --format csv > status.csv`, 'as CSV'),
  run: async (argv, io) => {
    const timeoutMs = sqlTimeoutMs(argv.timeout, io.stderr);
    await withStopSignals(stderrNotice(io.stderr), (signal) =>
      runQuery({
        db: datasetOption(argv.db), sql: argv.sql, format: argv.format, escapeFormulas: argv['escape-formulas'], bom: argv.bom,
        stream: io.stdout, maxColumnWidth: maxColumnWidthOf(argv['max-width']), timeoutMs, signal,
      }),
    );
    return 0;
  },
});
