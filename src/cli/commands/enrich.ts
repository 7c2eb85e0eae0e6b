import { z } from 'zod';
import { datasetOption, defineCommand, ESCAPE_FORMULAS_OPTION, outputFileOption, withDb } from '../common-options.ts';
import { ENRICH_DEFAULTS, enrichJob } from '../../export/enrich.ts';
import { ENRICH_ROW_MODES, TOP_LIMITS } from '../../export/enrich-layout.ts';
import { EXPORT_FORMATS } from '../../export/row-encoders.ts';
import { stderrNotice, withStopSignals } from '../signals.ts';
import { plural } from '../../plural.ts';
import { numberFlag, numberOption } from '../number-flags.ts';

// Read as typed: yargs' number type would make `--top abc` NaN, quoted as such.
const TOP_RULE = z.number().int().min(TOP_LIMITS.min).max(TOP_LIMITS.max);

/** `netingest enrich <job> --out <file>`: the job's input rows followed by their results (docs/export.md). */
export const enrichCommand = defineCommand({
  builder: (y) =>
    withDb(y)
      .positional('job', { type: 'string', demandOption: true, normalize: true, describe: 'job file (.json or .ts)' })
      .option('out', { ...outputFileOption('--out', 'file to write (replaced whole at the end)'), demandOption: true })
      .option('format', { choices: EXPORT_FORMATS, default: 'csv' as const, describe: 'csv (header row, RFC 4180) or jsonl' })
      .option('rows', {
        choices: ENRICH_ROW_MODES,
        default: ENRICH_DEFAULTS.rows,
        describe: 'per-input: one row per input row, the first --top results in numbered columns; per-result: one row per result, every column',
      })
      .option('top', numberOption(`per-input: results given numbered columns (default ${ENRICH_DEFAULTS.top})`))
      .option('delimiter', { choices: [',', ';', 'tab'] as const, describe: "CSV only: field delimiter (default: the input's)" })
      .option('bom', { type: 'boolean', describe: "CSV only: start with a UTF-8 byte-order mark, or not with --no-bom (default: as the input)" })
      .option('escape-formulas', ESCAPE_FORMULAS_OPTION)
      .option('changes-since', {
        type: 'string',
        describe: 'an ISO date or time (UTC without a zone): add changes_count and changes_since, what the history recorded per input since then',
      })
      .option('excel', {
        type: 'boolean',
        default: false,
        describe: "CSV for Excel and LibreOffice: a BOM, formulas escaped, and a ' before text they would turn into a number (+49…, 0123)",
      })
      .example('$0 enrich jobs/lookalikes.json --out leads.csv', 'one row per lead, its 5 first lookalikes beside it; for a spreadsheet, add --excel')
      .example('$0 enrich jobs/job-search.json --out jobs.csv', 'each search with its 5 first jobs; for one row per job, every column, add --rows per-result')
      .example('$0 enrich jobs/post-engagement.ts --out post.csv', 'each post URL with author, text and engagement')
      .epilogue(
        'Columns: the input columns, then netingest_line, netingest_status (ok, not_found, failed, invalid_input, ' +
          'deferred, pending), netingest_error, netingest_input_key, then similar_count and similar_1_name… ' +
          '(job_count, job_1_title…; post_* columns), or with --rows per-result every similar_*, job_* column. ' +
          "Results are each page's latest answer: what an earlier answer listed and a later one no longer does is left out.",
      ),
  run: async (argv, io) => {
    const result = await withStopSignals(stderrNotice(io.stderr), (signal) =>
      enrichJob({
        db: datasetOption(argv.db), job: argv.job, out: argv.out, format: argv.format, rows: argv.rows,
        top: numberFlag('--top', argv.top, TOP_RULE), delimiter: argv.delimiter === 'tab' ? '\t' : argv.delimiter,
        bom: argv.bom, escapeFormulas: argv['escape-formulas'], excel: argv.excel, changesSince: argv['changes-since'], signal,
      }),
    );
    const counts = Object.entries(result.statuses)
      .filter(([, n]) => n > 0)
      .map(([status, n]) => `${n} ${status}`)
      .join(', ');
    io.stderr.write(
      `netingest: wrote ${plural(result.rows, 'row')} for ${plural(result.inputRows, 'input row')} (${counts || 'no input rows'}) to ${argv.out}\n`,
    );
    if (result.notUtf8.rows > 0) {
      io.stderr.write(`netingest: ${plural(result.notUtf8.rows, 'input row')} (the first at line ${result.notUtf8.firstLine}) held bytes that are `
        + `not UTF-8, read and written as U+FFFD (\ufffd): save the job's input CSV as UTF-8 (in Excel: "CSV UTF-8") to keep them\n`);
    }
    return 0;
  },
});
