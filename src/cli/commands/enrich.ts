import { defineCommand } from '../command.ts';
import { BOM_OPTION, ESCAPE_FORMULAS_OPTION, withDb } from '../common-options.ts';
import { enrichJob } from '../../export/enrich.ts';
import { EXPORT_FORMATS } from '../../export/row-encoders.ts';
import { OUTPUT_STOP_SIGNALS, stderrNotice, withStopSignals } from '../signals.ts';
import { plural } from '../../plural.ts';

/** `netingest enrich <job> --out <file>`: the job's input rows followed by their results (docs/export.md). */
export const enrichCommand = defineCommand({
  name: 'enrich <job>',
  describe: "Write the job's input CSV enriched with its results: one row per result, or one row saying why none",
  builder: (y) =>
    withDb(y, { whenMissing: 'refuse' })
      .positional('job', { type: 'string', demandOption: true, normalize: true, describe: 'job file (.json or .ts)' })
      .option('out', { type: 'string', normalize: true, demandOption: true, describe: 'file to write (replaced whole at the end)' })
      .option('format', { choices: EXPORT_FORMATS, default: 'csv' as const, describe: 'csv (header row, RFC 4180) or jsonl' })
      .option('bom', BOM_OPTION)
      .option('escape-formulas', ESCAPE_FORMULAS_OPTION)
      .example('$0 enrich jobs/lookalikes.json --out lookalikes-enriched.csv', 'each reference company, one row per lookalike')
      .example('$0 enrich jobs/post-engagement.ts --out posts-enriched.csv', 'each post URL with author, text and engagement')
      .epilogue(
        'Columns: the input columns, then netingest_line, netingest_status (ok, not_found, failed, invalid_input, ' +
          'deferred, pending), netingest_error, netingest_input_key, then similar_*, post_* or job_* result columns. ' +
          "Results are each page's latest answer: what an earlier answer listed and a later one no longer does is left out.",
      ),
  run: async (argv, io) => {
    const result = await withStopSignals(stderrNotice(io.stderr), (signal) =>
      enrichJob({
        db: argv.db,
        job: argv.job,
        out: argv.out,
        format: argv.format,
        bom: argv.bom,
        escapeFormulas: argv['escape-formulas'],
        signal,
      }),
      OUTPUT_STOP_SIGNALS,
    );
    const counts = Object.entries(result.statuses)
      .filter(([, n]) => n > 0)
      .map(([status, n]) => `${n} ${status}`)
      .join(', ');
    io.stderr.write(
      `netingest: wrote ${plural(result.rows, 'row')} for ${plural(result.inputRows, 'input row')} (${counts || 'no input rows'}) to ${argv.out}\n`,
    );
    return 0;
  },
});
