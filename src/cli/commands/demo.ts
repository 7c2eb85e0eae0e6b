import { defineCommand } from '../command.ts';
import { startSandbox } from '../../sandbox/server.ts';
import { loadAllJobs } from '../../jobs/load.ts';
import { runJobs } from '../../runner/run-jobs.ts';
import { createLogger } from '../../runner/logger.ts';
import { formatRunSummary } from '../format-summary.ts';
import { exitCodeForRun } from '../exit-codes.ts';
import { runQuery } from '../../export/query.ts';

const DEMO_TOKEN = 'demo-sandbox-token';

/** The query the demo prints to show the dataset is there to be used with SQL. */
export const DEMO_QUERY = `SELECT reference_url, company_name, best_grade, round(best_score, 3) AS best_score, company_hq_country
FROM v_lookalikes ORDER BY best_score DESC LIMIT 8`;

/** `netingest demo`: the example jobs against a sandbox started on the spot. */
export const demoCommand = defineCommand({
  name: 'demo',
  describe: 'Start the bundled sandbox API, run the example jobs in jobs/ against it, and query the result',
  builder: (y) =>
    y
      .option('db', { type: 'string', default: 'data/demo.db', normalize: true, describe: 'database to fill' })
      .option('jobs-dir', { type: 'string', default: 'jobs', normalize: true, describe: 'folder of the example jobs' })
      .example('$0 demo', 'run the examples into data/demo.db; run it again to see nothing paid twice'),
  run: async (argv, io) => {
    const jobs = await loadAllJobs(argv['jobs-dir']);
    const sandbox = await startSandbox({ port: 0, tokens: { [DEMO_TOKEN]: 100_000 }, latencyMs: [2, 15], logRequests: false });
    try {
      io.stdout.write(`Sandbox API listening on ${sandbox.url}; running ${jobs.map((j) => j.name).join(', ')} into ${argv.db}\n`);
      const summary = await runJobs({
        dbPath: argv.db,
        jobs,
        api: { baseUrl: sandbox.url, token: DEMO_TOKEN },
        logger: createLogger({ stream: io.stderr, level: 'warn', secrets: [DEMO_TOKEN] }),
        progressStream: io.stderr,
      });
      io.stdout.write(formatRunSummary(summary));
      io.stdout.write(`\nA sample query (netingest query --db ${argv.db} "..."):\n${DEMO_QUERY}\n\n`);
      await runQuery({ db: argv.db, sql: DEMO_QUERY, format: 'table', stream: io.stdout });
      io.stdout.write(`\nRun it again: every task is still fresh, so nothing is paid twice. Try 'netingest status --db ${argv.db}'.\n`);
      return exitCodeForRun(summary);
    } finally {
      await sandbox.stop();
    }
  },
});
