/** `netingest status`: the last runs and what is left, read in one snapshot, with the live balance (askLiveBalance). */
import { statusReads, type StatusReport } from '../store/status.ts';
import { openStore } from '../store/open-store.ts';
import { driftPathLines, type DriftKind } from '../operations/drift.ts';
import { reportedBalance, roundCredits } from '../credits/credit-meter.ts';
import { resolveApiConfig } from '../api/config.ts';
import { ConfigError } from '../errors.ts';
import { terminalSafe, terminalValue } from '../text-width.ts';
import { lockHolder } from '../store/run-lock.ts';

export interface StatusOptions {
  /** The dataset, a SQLite file or a postgres:// URL; it must exist. */
  db: string;
  runs: number;
  /** Where to ask the free credit check (else the environment's); not asked when no API URL and token are set. */
  apiUrl?: string | undefined;
  tokenFile?: string | undefined;
}

/** What `netingest status --json` prints: the dataset's status, and the live balance when it could be asked. */
export type FullStatusReport = Awaited<ReturnType<typeof withLiveBalance>>;

/** The free credit check for `plan`, `status` and `report` when an API URL and token are set; else null (a ConfigError for a flag given that cannot be used). */
export async function askLiveBalance(flags: Pick<StatusOptions, 'apiUrl' | 'tokenFile'>) {
  let api;
  try {
    api = resolveApiConfig(flags);
  } catch (err) {
    // No usable API in the environment: the balance is not asked. A flag given that cannot be used (a token file
    // others can read, a missing one) is refused as `run` refuses it, not skipped without a word.
    if (err instanceof ConfigError && flags.apiUrl === undefined && flags.tokenFile === undefined) return null;
    throw err;
  }
  // Imported only when asked: the HTTP client (undici) is a third of what `status` and `plan` load, ~35 ms of a start.
  const { createApiClient } = await import('../api/client.ts');
  const client = createApiClient({ baseUrl: api.baseUrl, token: api.token });
  try {
    const c = await client.balance();
    return c === null ? null : { balance: roundCredits(reportedBalance(c)), totalCredits: c.total_credits, creditsUsed: c.credits_used };
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** Reads the status of `options.db` (read-only, in one snapshot) and asks the live balance. */
export async function statusReport(options: StatusOptions): Promise<FullStatusReport> {
  const store = await openStore(options.db);
  return withLiveBalance(await store.read((snapshot) => snapshot.read(statusReads(options.runs))), options);
}

/** The dataset's status with the live balance, when it can be asked (`report` reads the status in its own snapshot). */
export async function withLiveBalance(report: StatusReport, options: Pick<StatusOptions, 'apiUrl' | 'tokenFile'>) {
  const liveBalance = await askLiveBalance(options);
  // What the account used since the last answer stored: calls lost in flight in the last run, or use elsewhere.
  const since = liveBalance && report.lastCounters ? roundCredits(liveBalance.creditsUsed - report.lastCounters.creditsUsed) : null;
  return { ...report, liveBalance: liveBalance && { ...liveBalance, usedSinceLastStoredAnswer: since } };
}

/** The report as the command prints it without --json; `runsAsked`: the --runs it read (0 lists none of the runs there are). */
export function formatStatus(r: FullStatusReport, runsAsked?: number): string {
  return [...runLines(r, runsAsked), '', ...taskLines(r), '', ...creditLines(r)].join('\n') + '\n';
}

function runLines(r: FullStatusReport, runsAsked?: number): string[] {
  const lines: string[] = [];
  // Hosts, job names and errors are the database's text (errors may quote the API): their controls are blanked.
  const inUse = r.lock?.runId === null ? 'The dataset is in use' : 'A run is in progress';
  if (r.lock?.alive) lines.push(`${inUse}: ${lockHolder(r.lock.runId)} (pid ${r.lock.pid} on ${terminalValue(r.lock.host)}, since ${r.lock.acquiredAt})`, '');
  for (const run of r.unfinishedRuns) {
    lines.push(
      `Run ${run.id} stopped without finishing (pid ${run.pid ?? '?'} on ${terminalValue(run.host ?? '?')} is gone, started ${run.startedAt}): ` +
        'the next run closes it as abandoned; its figures below are what the database holds for it',
    );
  }
  if (r.unfinishedRuns.length > 0) lines.push('');
  lines.push('Recent runs:');
  // `none` after --runs 0 would say the dataset has no run.
  if (r.runs.length === 0) lines.push(runsAsked === 0 ? '  not listed (--runs 0)' : '  none');
  for (const run of r.runs) {
    lines.push(
      `  #${run.id} ${run.startedAt} ${(run.unfinished ? 'unfinished' : run.status).padEnd(23)} jobs ${terminalValue(JSON.parse(run.jobs).join(','))}: ${run.tasksDone} done, ` +
        `${run.tasksNotFound} not found, ${run.tasksFailed} failed, ${run.tasksDeferred} deferred, ${run.calls} calls, ` +
        // A run that skipped jobs has one line per job in its error: each goes under the run.
        `${run.creditsSpent ?? 0} credits${run.error ? `; ${terminalSafe(run.error).replaceAll('\n', '\n      ')}` : ''}`,
    );
  }
  return lines;
}

function taskLines(r: FullStatusReport): string[] {
  const lines = ['Tasks by status:'];
  const jobs = Object.entries(r.tasksByJob);
  if (jobs.length === 0) lines.push('  none');
  for (const [job, counts] of jobs) {
    lines.push(`  ${terminalValue(job)}: ${Object.entries(counts).map(([s, n]) => `${s} ${n}`).join(', ')}`);
  }
  if (r.wrongShapeBodiesKept > 0) {
    lines.push(
      '',
      `Paid answers of the wrong shape kept, not used: ${r.wrongShapeBodiesKept} (their tasks failed; after an upgrade that ` +
        'accepts them, `netingest reprocess` writes them without a call; those over the size limit it writes as they are, ' +
        'and those the database refused (STORE_REFUSED) once it takes them)',
    );
  }
  if (r.drift && r.drift.rows.length > 0) lines.push('', ...driftLines(r.drift));
  return lines;
}

/** What `status --drift` prints: every drift line of the last run whose answers had any. */
export function formatStatusDrift(r: FullStatusReport): string {
  return (r.drift && r.drift.rows.length > 0 ? driftLines(r.drift) : ['No answer drift: the last run that received answers found none.']).join('\n') + '\n';
}

function driftLines(drift: NonNullable<FullStatusReport['drift']>): string[] {
  const paths = driftPathLines(drift.rows.map((d) => ({ ...d, kind: d.kind as DriftKind, of: d.seen })));
  return [`Answer drift in run ${drift.runId} (answers that differ from the API's documented interface, stored as far as they can be read):`, ...paths.map((line) => `  ${line}`)];
}

function creditLines(r: FullStatusReport): string[] {
  const lines = [`Credits spent by all runs: ${r.creditsSpentAllRuns}`];
  if (r.creditsUncountedBetweenRuns > 0) {
    lines.push(
      `Credits used between runs and counted by none: ${r.creditsUncountedBetweenRuns} (paid answers lost in flight when a run was ` +
        'killed, or the token used elsewhere)',
    );
  }
  lines.push(
    r.lastCounters
      ? `Last known balance: ${r.lastCounters.balance} of ${r.lastCounters.totalCredits} (at ${r.lastCounters.at})`
      : 'Last known balance: unknown (no successful call yet)',
  );
  if (r.liveBalance) {
    const since = r.liveBalance.usedSinceLastStoredAnswer;
    const gap = since !== null && since > 0 ? `; ${since} used since the last answer stored, by calls lost in flight or elsewhere` : '';
    lines.push(`Balance now: ${r.liveBalance.balance} of ${r.liveBalance.totalCredits} (asked the service's free credit check${gap})`);
  }
  if (r.lastReport) lines.push(`Last report: ${terminalValue(r.lastReport.path)} (written ${r.lastReport.writtenAt})`);
  return lines;
}
