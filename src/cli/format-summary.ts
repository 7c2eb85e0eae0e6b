import { driftPathLines } from '../operations/drift.ts';
import type { JobSummary, RunSummary } from '../runner/run-summary.ts';
import { plural } from '../plural.ts';
import { formatCodeCounts } from '../runner/failure-log.ts';
import { terminalSafe, terminalValue } from '../text-width.ts';

const STATUS_TEXT: Record<RunSummary['status'], string> = {
  running: 'still running',
  completed: 'completed',
  completed_with_failures: 'completed, with failed items',
  stopped_credits: 'stopped on credits: the remaining tasks are deferred to the next run',
  stopped_throttled: 'stopped: the API throttled past the wait cap or the cap of throttled attempts; the remaining tasks are deferred',
  stopped_unusable: "stopped: the service's paid answers could not be read; they are kept for reprocess, the remaining tasks are deferred",
  interrupted: 'interrupted: the remaining tasks are deferred to the next run',
  failed: 'failed',
  abandoned: 'abandoned: its process ended without finishing; a later run closed its books',
};

/** A run's headline: its status (or that the API looks down), the jobs it skipped, and above all an end the database did not record. */
function headline(s: RunSummary): string {
  const status = s.stop?.reason === 'outage' ? 'stopped: the API looks down; the remaining tasks are deferred to the next run' : STATUS_TEXT[s.status];
  const skipped = s.jobs.filter((j) => j.status === 'skipped').length;
  const told = skipped > 0 ? `${status}; ${plural(skipped, 'job')} skipped (bad job or input file: see below)` : status;
  if (!s.notRecorded) return told;
  const why = s.notRecorded.code === 'DB_CONNECTION_LOST' ? 'the connection to it was lost' : 'its end could not be written';
  return `${told}; NOT RECORDED in the database: ${why} (see below)`;
}

/** The run's credits: spent (said to be an estimate where it is one) and left. */
function creditsLine(s: RunSummary): string {
  const left = s.creditsRemaining === null ? 'balance unknown (no answer showed it)' : `${s.creditsRemaining} left`;
  if (s.creditsSpent === null) return 'credits: unknown (no paid answer)';
  const spent = s.creditsSpentEstimated ? `about ${s.creditsSpent} spent` : `${s.creditsSpent} spent`;
  const why =
    s.creditsEstimatedAnswers > 0
      ? `${plural(s.creditsEstimatedAnswers, 'paid answer')} without readable credit counters, each counted at the highest cost learned for its operation`
      : s.creditsSpentEstimated && "the first call's cost is assumed: no balance was read before it";
  return `credits: ${spent}${why ? ` (${why})` : ''}, ${left}`;
}

/** Drift lines the summary shows; `netingest status --drift` shows them all. */
export const SUMMARY_DRIFT_LINES = 5;

/** The text summary ending `netingest run`; only the first drift lines, so dozens cannot hide the figures. */
export function formatRunSummary(s: RunSummary): string {
  const lines = [`Run ${s.runId}: ${headline(s)}`];
  for (const j of s.jobs) lines.push(...jobLines(j));
  lines.push(`  ${plural(s.calls, 'API call')}; ${creditsLine(s)}`);
  // Paid for and lost: the user must know the next run pays for them again.
  if (s.callsNotStored) lines.push(`  not stored: ${s.callsNotStored} of these calls (the database could not be written): their answers are lost, the next run calls their tasks again`);
  // An AUTH error's message already says to check the token: no hint added. Messages may quote the API: controls blanked.
  if (s.error) lines.push(`  error: ${terminalSafe(s.error.message)} [${s.error.code}]`);
  else if (s.stop) lines.push(`  stopped: ${terminalSafe(s.stop.message)}`);
  lines.push(...driftLines(s));
  // Why the figures above are in no `runs` row, and what they are then.
  if (s.notRecorded) {
    lines.push(
      `  not recorded: ${terminalSafe(s.notRecorded.message)} [${s.notRecorded.code}]`,
      '  these figures are what this process counted; the runs table shows the run as running until the next run closes it as abandoned',
    );
  }
  return lines.join('\n') + '\n';
}

/** A job's lines: why it did nothing, or its figures and what to look at. */
function jobLines(j: JobSummary): string[] {
  if (j.status === 'not_reached' && j.planned > 0) {
    return [
      `  ${j.name} (${j.operation}): stopped while reading its input (${plural(j.planned, 'task')} planned so far, ${j.deferred} deferred): ` +
        'no call made; the next run reads it again and does it',
    ];
  }
  if (j.status === 'not_reached') {
    const refresh = j.deferred > 0 ? ` (its refresh too: ${plural(j.deferred, 'task')} deferred)` : '';
    return [`  ${j.name} (${j.operation}): not reached: the run stopped before it; the next run does it${refresh}`];
  }
  if (j.error) {
    const what = j.operation ? `${j.name} (${j.operation})` : j.name;
    // A message of several lines (one per bad field) stays under its job.
    return [`  ${what}: skipped: ${terminalSafe(j.error.message).replaceAll('\n', '\n    ')} [${j.error.code}]`];
  }
  // Old failures are named apart: counted as fresh, they read as data that is there when it is not.
  const failedBefore = j.failedBefore > 0 ? ` (${j.failedBefore} failed earlier, not retried: use --refresh)` : '';
  return [
    `  ${j.name} (${j.operation}): ${plural(j.planned, 'task')}, ${j.fresh} still fresh, ${j.done} done, ${j.notFound} not found, ` +
      `${j.failed} failed${failedBefore}, ${j.deferred} deferred; ${plural(j.invalidRows, 'invalid row')}, ${plural(j.duplicates, 'duplicate')}`,
    // Among several workers the counts above are the job's: what this one did is said apart.
    ...(j.thisWorker ? [`    of these, this worker's calls answered ${j.thisWorker.done} done and ${j.thisWorker.notFound} not found`] : []),
    ...noticeLines(j),
    ...invalidLines(j),
  ];
}

/** Failures, records set aside, answers about another post, warnings. */
function noticeLines(j: JobSummary): string[] {
  const lines: string[] = [];
  if (j.failed > 0) lines.push(`    failed: ${j.failed} (${formatCodeCounts(j.failedByCode)})`);
  if (j.setAside > 0) lines.push(`    set aside: ${plural(j.setAside, 'record')} without its identity, the rest of their pages stored (table answer_anomalies)`);
  if (j.otherPost > 0) {
    lines.push(`    other post: ${plural(j.otherPost, 'answer')} named another post than the one asked for: stored under the post asked for, not merged (table answer_anomalies)`);
  }
  for (const w of j.warnings) lines.push(`    warning: ${terminalValue(w.message)} [${w.code}]`);
  return lines;
}

function invalidLines(j: JobSummary): string[] {
  // The reason may quote the row's cells: their controls are blanked.
  const lines = j.invalidSamples.map((bad) => `    invalid: ${terminalValue(`${bad.file}:${bad.line}${bad.field ? ` (${bad.field})` : ''}: ${bad.reason}`)}`);
  const unlisted = j.invalidRows - j.invalidKnown - j.invalidSamples.length;
  if (unlisted > 0) lines.push(`    ... ${unlisted} more in the invalid_inputs table`);
  if (j.invalidKnown > 0) {
    lines.push(`    ${plural(j.invalidKnown, 'invalid row')} already reported by an earlier run, not listed again (\`--invalid-out FILE\` writes them all)`);
  }
  return lines;
}

/** One line per drifted path, the first SUMMARY_DRIFT_LINES of them, and how many more `status --drift` shows. */
function driftLines(s: RunSummary): string[] {
  const all = driftPathLines(s.drift);
  const lines = all.slice(0, SUMMARY_DRIFT_LINES).map((line) => `  drift: ${line}`);
  if (all.length > SUMMARY_DRIFT_LINES) lines.push(`  drift: and ${all.length - SUMMARY_DRIFT_LINES} more (netingest status --drift)`);
  return lines;
}
