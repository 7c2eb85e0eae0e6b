/**
 * `npm run soak`: the long soak (3000 tasks, 5 SIGKILLs by default) with its checks printed; exit 1 when any
 * fails. Flags: --tasks N, --kills N, --concurrency N, --seed N, --keep (keep the working folder), --postgres
 * (the datasets in a throwaway PostgreSQL cluster started from the machine's binaries, as the tests do).
 */
import { parseArgs } from 'node:util';
import { formatSoakReport, runSoak, SOAK_DEFAULTS } from './soak.ts';
import { pgUnavailableReason, startPgCluster } from '../pg/pg-cluster.ts';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: String(SOAK_DEFAULTS.tasks) },
    kills: { type: 'string', default: String(SOAK_DEFAULTS.kills) },
    concurrency: { type: 'string', default: String(SOAK_DEFAULTS.concurrency) },
    seed: { type: 'string', default: String(SOAK_DEFAULTS.seed) },
    keep: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
  },
});
const unavailable = values.postgres ? pgUnavailableReason() : null;
if (unavailable) {
  process.stderr.write(`soak --postgres: PostgreSQL cannot run here: ${unavailable}\n`);
  process.exit(1);
}
const started = Date.now();
const cluster = values.postgres ? await startPgCluster() : null;
const report = await runSoak({
  pgClusterUrl: cluster?.url ?? null,
  tasks: Number(values.tasks),
  kills: Number(values.kills),
  concurrency: Number(values.concurrency),
  seed: Number(values.seed),
  keepDir: values.keep,
  log: (line) => process.stderr.write(`${line}\n`),
}).finally(() => cluster?.stop());
process.stdout.write(formatSoakReport(report));
process.stdout.write(`took ${((Date.now() - started) / 1000).toFixed(1)} s${values.keep ? `; files kept in ${report.dir}` : ''}\n`);
process.exitCode = report.ok ? 0 : 1;
