import { existsSync, statSync } from 'node:fs';
import { defineCommand } from '../command.ts';
import { datasetOption, withReadDb } from '../common-options.ts';
import { numberFlag } from '../number-flags.ts';
import { KEEP_RAW_DAYS_RULE } from '../../jobs/schema.ts';
import { openDatabase } from '../../store/open.ts';
import { acquireRunLock } from '../../store/run-lock.ts';
import { pruneRawBodies, type PruneReport } from '../../store/raw-prune.ts';
import { UsageError } from '../../errors.ts';
import { EXIT } from '../exit-codes.ts';
import { isPostgresUrl } from '../../store/pg/database-url.ts';
import type { PgPruneReport } from '../../store/pg/prune-dataset.ts';

const VACUUM_HELP =
  'reclaim the space afterwards. SQLite: rewrite the file so it shrinks (needs free disk about its size). PostgreSQL: ' +
  'VACUUM (ANALYZE) raw_responses, which blocks no reader or writer and keeps the space for new bodies rather than shrinking the files ' +
  '(VACUUM FULL is the DBA\'s call). --no-vacuum leaves it for new bodies (and autovacuum)';

/** Default retention of `netingest prune`: long enough to reprocess a month of refreshes after a fix. */
export const PRUNE_DEFAULTS = { keepDays: 90 } as const;

/** `netingest prune`: drop superseded raw bodies past a retention period, gzip old text bodies, reclaim the space. */
export const pruneCommand = defineCommand({
  name: 'prune',
  describe: 'Drop stored raw bodies that a newer answer superseded more than --keep-days ago, and reclaim the space',
  builder: (y) =>
    withReadDb(y)
      .option('keep-days', { type: 'string', default: String(PRUNE_DEFAULTS.keepDays), describe: 'keep every body received within this many days' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'say what would go and change nothing' })
      .option('vacuum', { type: 'boolean', default: true, describe: VACUUM_HELP })
      .option('json', { type: 'boolean', default: false, describe: 'print the report as JSON' })
      .example('netingest prune --dry-run', 'how much would go with the default 90 days')
      .example('netingest prune --keep-days 30', 'keep a month of superseded bodies'),
  run: async (argv, io) => {
    const db = datasetOption(argv.db);
    const keepDays = numberFlag('--keep-days', argv['keep-days'], KEEP_RAW_DAYS_RULE, 'keepRawDays') ?? PRUNE_DEFAULTS.keepDays;
    if (isPostgresUrl(db)) {
      // Loaded here: a SQLite prune does not load the pg driver.
      const { prunePgDataset } = await import('../../store/pg/prune-dataset.ts');
      const report = await prunePgDataset(db, { keepDays, dryRun: argv['dry-run'], vacuum: argv.vacuum });
      io.stdout.write(argv.json ? JSON.stringify(report, null, 2) + '\n' : formatPgReport(report, argv['dry-run']));
      return EXIT.ok;
    }
    if (!existsSync(db)) throw new UsageError(`no database at ${db}: nothing to prune (see --db)`);
    const sizeBefore = statSync(db).size;
    const report = pruneLocked(db, keepDays, argv['dry-run'], argv.vacuum);
    // Measured once the connection is closed: closing checkpoints the WAL into the file.
    const sizeAfter = statSync(db).size;
    const out = argv.json ? JSON.stringify({ ...report, fileBytesBefore: sizeBefore, fileBytesAfter: sizeAfter }, null, 2) + '\n' : formatReport(report, argv['dry-run'], sizeBefore, sizeAfter);
    io.stdout.write(out);
    return EXIT.ok;
  },
});

function pruneLocked(db: string, keepDays: number, dryRun: boolean, vacuum: boolean): PruneReport {
  const database = openDatabase(db);
  try {
    // A run writing at the same time would race the deletes; take the run lock like reprocess does.
    const lock = acquireRunLock(database);
    try {
      const report = pruneRawBodies(database, { keepDays, dryRun, compressOld: true });
      if (vacuum && !dryRun && (report.dropped > 0 || report.compressed > 0)) database.sqlite.exec('VACUUM');
      return report;
    } finally {
      lock.release();
    }
  } finally {
    database.close();
  }
}

function formatReport(r: PruneReport, dryRun: boolean, before: number, after: number): string {
  const lines = ruleLines(r, dryRun);
  if (!dryRun) lines.push(`Database file: ${mb(before)} before, ${mb(after)} after.`);
  return lines.join('\n') + '\n';
}

function formatPgReport(r: PgPruneReport, dryRun: boolean): string {
  const lines = ruleLines(r, dryRun);
  if (!dryRun) {
    lines.push(`raw_responses on the server (table, TOAST and indexes): ${mb(r.rawResponsesBytesBefore)} before, ${mb(r.rawResponsesBytesAfter)} after` +
      `${r.vacuumed ? ' VACUUM' : ''}; PostgreSQL reuses the freed space for new bodies rather than shrinking its files.`);
  }
  return lines.join('\n') + '\n';
}

function ruleLines(r: PruneReport, dryRun: boolean): string[] {
  const would = dryRun ? 'would be ' : '';
  const lines = [
    `${r.dropped} raw bodies received before ${r.cutoff} and superseded by a newer answer ${would}dropped (${mb(r.droppedBytes)}); ${r.kept} kept.`,
  ];
  if (r.compressed > 0) lines.push(`${r.compressed} bodies stored as text by an earlier netingest ${would}gzipped, saving ${mb(r.compressedSavedBytes)}.`);
  return lines;
}

function mb(bytes: number): string {
  return `${(bytes / 1_048_576).toFixed(1)} MB`;
}
