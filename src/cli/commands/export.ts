import { BOM_OPTION, datasetOption, defineCommand, ESCAPE_FORMULAS_OPTION, outputFileOption, withDb } from '../common-options.ts';
import { UsageError } from '../../errors.ts';
import { exportSql, exportTable, type ExportResult } from '../../export/export-table.ts';
import { EXPORT_FORMATS } from '../../export/row-encoders.ts';
import { exportSources } from '../../export/sources.ts';
import { stderrNotice, withStopSignals } from '../signals.ts';
import { plural } from '../../plural.ts';
import { sqlTimeoutMs, TIMEOUT_OPTION } from '../number-flags.ts';

/** `netingest export`: a table, a view or a SELECT as CSV or JSON Lines, to a file (atomically) or stdout. */
export const exportCommand = defineCommand({
  builder: (y) =>
    withDb(y)
      .positional('table', { type: 'string', describe: 'table or view to export (see --list)' })
      .option('sql', { type: 'string', describe: 'export the rows of this read-only SELECT instead of a table' })
      .option('format', { choices: EXPORT_FORMATS, default: 'csv' as const, describe: 'csv (header row, RFC 4180) or jsonl' })
      .option('out', outputFileOption('--out', 'file to write (replaced whole at the end); default stdout'))
      .option('since', {
        type: 'string',
        describe:
          'only rows updated (or last seen) at or after this date: YYYY-MM-DD (midnight UTC) or an ISO date-time, with Z or an offset such as +01:00 (none: UTC)',
      })
      .option('timeout', { ...TIMEOUT_OPTION, describe: `with --sql: ${TIMEOUT_OPTION.describe}` })
      .option('bom', BOM_OPTION)
      .option('escape-formulas', ESCAPE_FORMULAS_OPTION)
      .option('list', { type: 'boolean', default: false, describe: 'list the tables and views that can be exported' })
      .example('$0 export companies --out companies.csv', 'every company, as CSV')
      .example('$0 export jobs --since 2026-11-01 --format jsonl', 'jobs seen since November 1st, as JSON Lines')
      .example('$0 export v_lookalikes --out lookalikes.csv', 'a view: lookalikes with their best grade')
      .example('$0 export --sql "$(cat big.sql)" --out big.csv', 'the rows of a query kept in a file'),
  run: async (argv, io) => {
    if (argv.list) {
      refuseWithList(argv);
      for (const s of exportSources()) io.stdout.write(`${s.name}\t${s.kind}${s.seenAtColumn ? `\t--since on ${s.seenAtColumn}` : ''}\n`);
      return 0;
    }
    if (argv.sql !== undefined && argv.table !== undefined) throw new UsageError('give a table or --sql, not both');
    if (argv.sql === undefined && argv.table === undefined) {
      throw new UsageError('name a table to export, or give --sql "SELECT ..." (see --list)');
    }
    if (argv.sql !== undefined && argv.since !== undefined) {
      throw new UsageError('--since applies to tables; with --sql, filter in the WHERE clause');
    }
    if (argv.sql === undefined && argv.timeout !== undefined) {
      throw new UsageError('--timeout applies to --sql; a table export reads each row once and always ends');
    }
    const common = { db: datasetOption(argv.db), format: argv.format, bom: argv.bom, escapeFormulas: argv['escape-formulas'], out: argv.out, stream: io.stdout };
    const result: ExportResult = await withStopSignals(stderrNotice(io.stderr), (signal) =>
      argv.sql !== undefined
        ? exportSql({ ...common, sql: argv.sql, timeoutMs: sqlTimeoutMs(argv.timeout, io.stderr), signal })
        : exportTable({ ...common, table: argv.table!, since: argv.since, signal }),
    );
    if (result.out !== null) io.stderr.write(`netingest: exported ${plural(result.rows, 'row')} to ${result.out}\n`);
    return 0;
  },
});

/** `--list` prints the exportable names and nothing else: a flag of an export given with it would be ignored without a word. */
function refuseWithList(argv: { table?: string; sql?: string; out?: string; since?: string; timeout?: unknown }): void {
  const given = [
    argv.table !== undefined && `the table (${argv.table})`,
    ...(['sql', 'out', 'since', 'timeout'] as const).filter((flag) => argv[flag] !== undefined).map((flag) => `--${flag}`),
  ].filter(Boolean);
  if (given.length === 0) return;
  const redirect = argv.out !== undefined ? ` (to keep the list in a file: netingest export --list > ${argv.out})` : '';
  throw new UsageError(`--list only prints the names that can be exported, on stdout: leave out ${given.join(', ')}${redirect}`);
}
