/**
 * A worker that holds the dataset lock, starts its run on `jobs`, reserves a block of calls on `apiUrl`, prints
 * `reserved <its lock session's pid>` and waits to be killed (SIGKILL: its block is left behind, as a killed run's would be).
 */
import pg from 'pg';
import { holdShared } from '../../../src/store/pg/dataset-lock.ts';
import { startWorkerRun } from '../../../src/store/pg/coordination/worker-runs.ts';
import { SharedCreditBudget } from '../../../src/store/pg/coordination/shared-credit-budget.ts';

const settings = JSON.parse(process.argv[2]!) as { url: string; jobs: string[]; apiUrl: string };
const pool = new pg.Pool({ connectionString: settings.url, max: 2 });
const hold = await holdShared(pool, 'the test dataset');
const { runKey } = await startWorkerRun(pool, { jobs: settings.jobs, startedAt: new Date().toISOString(), pid: process.pid, host: 'test', backendPid: hold.backendPid });
const budget = new SharedCreditBudget(pool, { apiUrl: settings.apiUrl, runKey, workerId: `killed-${process.pid}` });
const { reservation } = await budget.reserveBlock(2, 64, { reserve: 0, maxPerRun: null }, false);
if (!reservation) throw new Error('no block reserved');
process.stdout.write(`reserved ${hold.backendPid}\n`);
setInterval(() => undefined, 60_000);
