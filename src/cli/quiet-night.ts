/**
 * Quiet under cron: a run's routine lines are held until it has something to say (a warning, error or progress line); a
 * night with nothing to do keeps only `run finished`, which carries the exit code.
 */
import { createLogger, loggerOf, type LoggerOptions } from '../runner/logger.ts';
import type { RunSummary } from '../runner/run-jobs.ts';

const LAST_LINE = 'run finished';

/** A logger holding its info lines, and how the run's end settles them. */
export function holdRoutineLines(options: LoggerOptions) {
  let held: string[] | null = [];
  let lastLine = -1;
  const sink = {
    write: (line: string) => (held === null ? options.stream.write(line) : held.push(line) > 0),
  } as unknown as NodeJS.WritableStream;
  const inner = createLogger({ ...options, stream: sink });
  const release = () => {
    if (held === null) return;
    const lines = held;
    held = null;
    for (const line of lines) options.stream.write(line);
  };
  const logger = loggerOf((level, msg, fields) => {
    if (level === 'warn' || level === 'error' || msg === 'progress') release();
    if (msg === LAST_LINE && held !== null) lastLine = held.length;
    inner[level](msg, fields);
  });
  return {
    logger,
    /** Writes what is held, or for a quiet run only the `run finished` line; later lines are written at once. */
    settle(quiet: boolean): void {
      if (quiet && held !== null) held = held.slice(lastLine, lastLine + 1);
      release();
    },
  };
}

/** A run with nothing to tell: no call, completed, nothing new invalid, failed, deferred or warned about. */
export function hadNothingToDo(summary: RunSummary): boolean {
  return (
    summary.calls === 0 &&
    summary.status === 'completed' &&
    summary.jobs.every(
      (j) => j.status === 'ran' && j.invalidRows === j.invalidKnown && j.failed === 0 && j.deferred === 0 && j.warnings.length === 0,
    )
  );
}
