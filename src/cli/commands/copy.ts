import { defineCommand } from '../common-options.ts';
import { EXIT } from '../exit-codes.ts';
import { copyTarget } from '../../store/open-store.ts';

/** `netingest copy`: a SQLite dataset into an empty PostgreSQL database, in one transaction. */
export const copyCommand = defineCommand({
  builder: (y) =>
    y
      .option('from', { type: 'string', demandOption: true, normalize: true, describe: 'the SQLite database file to copy; it must exist' })
      .option('to', { type: 'string', describe: 'postgres://user@host:5432/database (default: $NETINGEST_DATABASE_URL); it must hold no data yet' })
      .option('json', { type: 'boolean', default: false, describe: 'print the rows copied per table as JSON' })
      .example('netingest copy --from data/netingest.db --to postgres://netingest@db:5432/netingest', 'move the dataset to PostgreSQL'),
  run: async (argv, io) => {
    const target = copyTarget(argv.to);
    // Loaded here: `netingest copy --help` needs neither drizzle nor pg.
    const { copyDataset } = await import('../../store/copy-dataset.ts');
    const report = await copyDataset(argv.from, target.url);
    if (argv.json) {
      io.stdout.write(JSON.stringify({ from: argv.from, to: target.shownUrl, ...report }, null, 2) + '\n');
    } else {
      const width = Math.max(...report.tables.map((t) => t.table.length));
      const lines = report.tables.map((t) => `  ${t.table.padEnd(width)}  ${t.rows}`);
      io.stdout.write(`Copied ${report.rows} rows from ${argv.from} to ${target.shownUrl}:\n${lines.join('\n')}\n`);
    }
    return EXIT.ok;
  },
});
