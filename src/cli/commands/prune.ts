import { datasetOption, defineCommand, withDb } from '../common-options.ts';
import { numberFlag, numberOption } from '../number-flags.ts';
import { KEEP_RAW_DAYS_RULE } from '../../jobs/schema.ts';
import type { StorePruneResult } from '../../store/dataset-store.ts';
import { openStore } from '../../store/open-store.ts';
import { EXIT } from '../exit-codes.ts';

const VACUUM_HELP =
  'reclaim the space afterwards. SQLite: rewrite the file so it shrinks (needs free disk about its size). PostgreSQL: ' +
  'VACUUM (ANALYZE) raw_responses, which blocks no reader or writer and keeps the space for new bodies rather than shrinking the files ' +
  '(VACUUM FULL is the DBA\'s call). --no-vacuum leaves it for new bodies (and autovacuum)';

/** Default retention of `netingest prune`: long enough to reprocess a month of refreshes after a fix. */
export const PRUNE_DEFAULTS = { keepDays: 90 } as const;

/** `netingest prune`: drop superseded raw bodies past a retention period, gzip old text bodies, reclaim the space. */
export const pruneCommand = defineCommand({
  builder: (y) =>
    withDb(y)
      .option('keep-days', numberOption('keep every body received within this many days', PRUNE_DEFAULTS.keepDays))
      .option('dry-run', { type: 'boolean', default: false, describe: 'say what would go and change nothing' })
      .option('vacuum', { type: 'boolean', default: true, describe: VACUUM_HELP })
      .option('json', { type: 'boolean', default: false, describe: 'print the report as JSON' })
      .example('netingest prune --dry-run', 'how much would go with the default 90 days')
      .example('netingest prune --keep-days 30', 'keep a month of superseded bodies'),
  run: async (argv, io) => {
    const store = await openStore(datasetOption(argv.db));
    const keepDays = numberFlag('--keep-days', argv['keep-days'], KEEP_RAW_DAYS_RULE, 'keepRawDays') ?? PRUNE_DEFAULTS.keepDays;
    const result = await store.prune({ keepDays, dryRun: argv['dry-run'], vacuum: argv.vacuum });
    io.stdout.write(argv.json ? JSON.stringify(result.report, null, 2) + '\n' : formatReport(result, argv['dry-run']));
    return EXIT.ok;
  },
});

function formatReport({ report: r, space }: StorePruneResult, dryRun: boolean): string {
  const would = dryRun ? 'would be ' : '';
  const lines = [
    `${r.dropped} raw bodies received before ${r.cutoff} and superseded by a newer answer ${would}dropped (${mb(r.droppedBytes)}); ${r.kept} kept.`,
  ];
  if (r.compressed > 0) lines.push(`${r.compressed} bodies stored as text by an earlier netingest ${would}gzipped, saving ${mb(r.compressedSavedBytes)}.`);
  if (!dryRun) lines.push(`${space.what}: ${mb(space.bytesBefore)} before, ${mb(space.bytesAfter)} after${space.note}.`);
  return lines.join('\n') + '\n';
}

function mb(bytes: number): string {
  return `${(bytes / 1_048_576).toFixed(1)} MB`;
}
