import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { defineCommand, pathCoerce } from '../common-options.ts';
import { PACKAGE_ROOT } from '../../package-root.ts';
import { startSandbox } from '../../sandbox/server.ts';
import { networkHost } from '../../urls/canonical.ts';
import { loadAllJobs } from '../../jobs/load.ts';
import { runJobs } from '../../runner/run-jobs.ts';
import { createLogger } from '../../runner/logger.ts';
import { formatRunSummary } from '../format-summary.ts';
import { exitCodeForRun } from '../exit-codes.ts';
import { runQuery } from '../../export/query.ts';
import { locateDataset } from '../../store/locator.ts';
import { RunNotRecordedError, UsageError } from '../../errors.ts';
import { describeFsError } from '../../input/input-error.ts';

const DEMO_TOKEN = 'demo-sandbox-token';
const DEMO_DB_NAME = 'demo.db';
/** How the demo's closing lines name the CLI: works from a checkout (`npm run demo`, no `netingest` on PATH) and from an install alike. */
const CLI = 'npx --no-install netingest';

/** The query the demo prints to show the dataset is there to be used with SQL. */
export const DEMO_QUERY = `SELECT reference_url, company_name, best_grade, round(best_score, 3) AS best_score, company_hq_country
FROM v_lookalikes ORDER BY best_score DESC LIMIT 8`;

/** `netingest demo`: the example jobs against a sandbox started on the spot. */
export const demoCommand = defineCommand({
  builder: (y) =>
    y
      .option('dir', { type: 'string', coerce: pathCoerce('--dir'), describe: `folder the demo writes ${DEMO_DB_NAME} into (default: a new temporary folder)` })
      // Not normalized: a postgres:// URL's `//` must stay.
      .option('db', { type: 'string', describe: `database to fill: a SQLite file or postgres://user@host:5432/database (default: ${DEMO_DB_NAME} in --dir)` })
      .option('live', {
        type: 'boolean',
        default: true,
        describe: "the sandbox answers as the live service may (members missing or null, the author's URL under a brand name, a capped page size, mixed www./bare URLs); --no-live answers exactly as the API's documented interface describes, without the live service's quirks",
      })
      .option('jobs-dir', { type: 'string', coerce: pathCoerce('--jobs-dir'), describe: "folder of the jobs to run (default: the package's example jobs)" })
      .example('$0 demo', 'run the examples into a new temporary folder, and say which')
      .example('$0 demo --dir demo', 'into ./demo/demo.db; run it again to see nothing paid twice'),
  run: async (argv, io) => {
    // The bundled jobs name their inputs as data/*.csv: read from the package, wherever the command runs.
    const jobs = argv['jobs-dir'] === undefined ? await loadAllJobs(join(PACKAGE_ROOT, 'jobs'), { cwd: PACKAGE_ROOT }) : await loadAllJobs(argv['jobs-dir']);
    const location = locateDataset({ db: argv.db ?? join(demoDir(argv.dir), DEMO_DB_NAME), env: {} });
    const db = location.engine === 'postgres' ? location.url : location.file;
    // What the demo prints: a URL with its password hidden, a file as its full path.
    const shown = location.engine === 'postgres' ? location.shownUrl : resolve(location.file);
    // Its URLs on the host the client expects (NETINGEST_NETWORK_HOST), so the two agree in live mode too.
    const sandbox = await startSandbox({
      port: 0, tokens: { [DEMO_TOKEN]: 100_000 }, latencyMs: [2, 15], logRequests: false, liveShapes: argv.live, networkHost: networkHost(),
    });
    try {
      io.stdout.write(`Sandbox API listening on ${sandbox.url}; running ${jobs.map((j) => j.name).join(', ')} into ${shown}\n`);
      const summary = await runJobs({
        dbPath: db,
        jobs,
        api: { baseUrl: sandbox.url, token: DEMO_TOKEN },
        // Errors only: the summary below says the warnings (drift, failures by code) once.
        logger: createLogger({ stream: io.stderr, level: 'error', secrets: [DEMO_TOKEN] }),
        progressStream: io.stderr,
        // Recorded in its runs row, as `netingest run` records it: the report shows it.
        exitCodeOf: exitCodeForRun,
      }).catch((err: unknown) => {
        // An end the database did not record: what the run did is still told, then its error.
        if (err instanceof RunNotRecordedError) io.stdout.write(formatRunSummary(err.summary));
        throw err;
      });
      io.stdout.write(formatRunSummary(summary));
      io.stdout.write(`\nA sample query (${CLI} query --db ${shown} "..."):\n${DEMO_QUERY}\n\n`);
      await runQuery({ db, sql: DEMO_QUERY, format: 'table', stream: io.stdout });
      const again = argv.db !== undefined ? `--db ${shown}` : `--dir ${argv.dir ?? resolve(db, '..')}`;
      io.stdout.write(`\nThe demo's database is ${shown}.\n`);
      io.stdout.write(`Run '${CLI} demo ${again}' again: every task is still fresh, so nothing is paid twice. Try '${CLI} status --db ${shown}'.\n`);
      return exitCodeForRun(summary);
    } finally {
      await sandbox.stop();
    }
  },
});

/** The folder the demo writes into: `dir` (created when missing), or a new temporary one. */
function demoDir(dir: string | undefined): string {
  if (dir === undefined) return mkdtempSync(join(tmpdir(), 'netingest-demo-'));
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    // `--dir data/demo.db` after a first demo: the database's own path given for its folder.
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'EEXIST' || code === 'ENOTDIR' ? 'it (or a folder on its path) is a file' : describeFsError(err);
    throw new UsageError(`--dir ${dir}: cannot make the demo's folder: ${why}; --dir names a folder, --db a database file`, 'USAGE', { cause: err });
  }
  return dir;
}
