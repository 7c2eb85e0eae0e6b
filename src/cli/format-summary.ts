import { driftPathLines } from '../operations/drift.ts';
import type { RunSummary } from '../runner/run-jobs.ts';
import { plural } from '../plural.ts';
import { formatCodeCounts } from '../runner/failure-log.ts';

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

/** The headline of a run: its status, or for a run stopped because the API looks down, that; and the jobs it skipped. */
function headline(s: RunSummary): string {
  const status = s.stop?.reason === 'outage' ? 'stopped: the API looks down; the remaining tasks are deferred to the next run' : STATUS_TEXT[s.status];
  const skipped = s.jobs.filter((j) => j.status === 'skipped').length;
  return skipped > 0 ? `${status}; ${plural(skipped, 'job')} skipped (bad job or input file: see below)` : status;
}

/** The run's credits: spent (said to be an estimate where it is one) and left. */
function creditsLine(s: RunSummary): string {
  const left = s.creditsRemaining === null ? 'balance unknown (no answer showed it)' : `${s.creditsRemaining} left`;
  if (s.creditsSpent === null) return 'credits: unknown (no paid answer)';
  const spent = s.creditsSpentEstimated ? `about ${s.creditsSpent} spent` : `${s.creditsSpent} spent`;
  const why: string[] = [];
  if (s.creditsEstimatedAnswers > 0) {
    why.push(`${plural(s.creditsEstimatedAnswers, 'paid answer')} without readable credit counters, each counted at the highest cost learned for its operation`);
  } else if (s.creditsSpentEstimated) {
    why.push('the first call\'s cost is assumed: no balance was read before it');
  }
  return `credits: ${spent}${why.length > 0 ? ` (${why.join('; ')})` : ''}, ${left}`;
}

/** The human summary printed at the end of `netingest run`. */
export function formatRunSummary(s: RunSummary): string {
  const lines = [`Run ${s.runId}: ${headline(s)}`];
  for (const j of s.jobs) {
    if (j.status === 'not_reached' && j.planned > 0) {
      lines.push(
        `  ${j.name} (${j.operation}): stopped while reading its input (${plural(j.planned, 'task')} planned so far, ${j.deferred} deferred): ` +
          'no call made; the next run reads it again and does it',
      );
      continue;
    }
    if (j.status === 'not_reached') {
      const refresh = j.deferred > 0 ? ` (its refresh too: ${plural(j.deferred, 'task')} deferred)` : '';
      lines.push(`  ${j.name} (${j.operation}): not reached: the run stopped before it; the next run does it${refresh}`);
      continue;
    }
    if (j.error) {
      const what = j.operation ? `${j.name} (${j.operation})` : j.name;
      // A message of several lines (one per bad field) stays under its job.
      lines.push(`  ${what}: skipped: ${j.error.message.replaceAll('\n', '\n    ')} [${j.error.code}]`);
      continue;
    }
    // Old failures are named apart: counted as fresh, they read as data that is there when it is not.
    const failedBefore = j.failedBefore > 0 ? ` (${j.failedBefore} failed earlier, not retried: use --refresh)` : '';
    lines.push(
      `  ${j.name} (${j.operation}): ${plural(j.planned, 'task')}, ${j.fresh} still fresh, ${j.done} done, ${j.notFound} not found, ` +
        `${j.failed} failed${failedBefore}, ${j.deferred} deferred; ${plural(j.invalidRows, 'invalid row')}, ${plural(j.duplicates, 'duplicate')}`,
    );
    if (j.failed > 0) lines.push(`    failed: ${j.failed} (${formatCodeCounts(j.failedByCode)})`);
    if (j.setAside > 0) lines.push(`    set aside: ${plural(j.setAside, 'record')} without its identity, the rest of their pages stored (table answer_anomalies)`);
    if (j.otherPost > 0) {
      lines.push(`    other post: ${plural(j.otherPost, 'answer')} named another post than the one asked for: stored under the post asked for, not merged (table answer_anomalies)`);
    }
    for (const w of j.warnings) lines.push(`    warning: ${w.message} [${w.code}]`);
    for (const bad of j.invalidSamples) {
      lines.push(`    invalid: ${bad.file}:${bad.line}${bad.field ? ` (${bad.field})` : ''}: ${bad.reason}`);
    }
    const unlisted = j.invalidRows - j.invalidKnown - j.invalidSamples.length;
    if (unlisted > 0) lines.push(`    ... ${unlisted} more in the invalid_inputs table`);
    if (j.invalidKnown > 0) {
      lines.push(`    ${plural(j.invalidKnown, 'invalid row')} already reported by an earlier run, not listed again (\`--invalid-out FILE\` writes them all)`);
    }
  }
  // Paths are many only when the service changed a lot: each still gets its line, as the issue asks.
  for (const line of driftPathLines(s.drift)) lines.push(`  drift: ${line}`);
  lines.push(`  ${plural(s.calls, 'API call')}; ${creditsLine(s)}`);
  // An AUTH error's message already says to check the token: a hint added here printed it twice.
  if (s.error) lines.push(`  error: ${s.error.message} [${s.error.code}]`);
  else if (s.stop) lines.push(`  stopped: ${s.stop.message}`);
  return lines.join('\n') + '\n';
}
