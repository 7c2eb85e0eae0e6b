import { defineCommand } from '../common-options.ts';
import { EXIT } from '../exit-codes.ts';
import { copySource, copyTarget } from '../../store/open-store.ts';

/** `netingest copy`: a SQLite dataset into an empty PostgreSQL database, in one transaction. */
export const copyCommand = defineCommand({
  builder: (y) =>
    y
      // Not normalized: a postgres:// URL given by mistake must keep its `//` to be recognised (and its password hidden).
      .option('from', { type: 'string', demandOption: true, describe: 'the SQLite database file to copy; it must exist' })
      .option('to', { type: 'string', describe: 'postgres://user@host:5432/database (default: $NETINGEST_DATABASE_URL); it must hold no data yet' })
      .option('json', { type: 'boolean', default: false, describe: 'print the rows copied per table as JSON' })
      .example('netingest copy --from data/netingest.db --to postgres://netingest@db:5432/netingest', 'move the dataset to PostgreSQL'),
  run: async (argv, io) => {
    const from = copySource(argv.from);
    const target = copyTarget(argv.to);
    // Loaded here: `netingest copy --help` needs neither drizzle nor pg.
    const { copyDataset } = await import('../../store/copy-dataset.ts');
    const report = await copyDataset(from, target.url);
    if (argv.json) {
      io.stdout.write(JSON.stringify({ from, to: target.shownUrl, ...report }, null, 2) + '\n');
    } else {
      const width = Math.max(...report.tables.map((t) => t.table.length));
      const lines = report.tables.map((t) => `  ${t.table.padEnd(width)}  ${t.rows}`);
      io.stdout.write(`Copied ${report.rows} rows from ${from} to ${target.shownUrl}:\n${lines.join('\n')}\n`);
    }
    return EXIT.ok;
  },
});
