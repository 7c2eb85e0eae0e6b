import { RUN_DEFAULTS } from '../runner/run-jobs.ts';

/**
 * How long work may take to wind down after the first SIGINT/SIGTERM before the process exits anyway: longer
 * than a call may last, so that a call the service has already charged for is answered and written, not cut
 * off and paid for again by the next run.
 */
export const SHUTDOWN_GRACE_MS = RUN_DEFAULTS.requestTimeoutMs + 10_000;

/**
 * First SIGINT/SIGTERM: abort the controller, so a run stops sending (calls in flight finish and are written)
 * and an export drops its temporary file. A second signal, or the grace running out, exits at once with 130:
 * every database write is a whole SQLite transaction and exports write to a temporary file, so nothing is
 * left half-written wherever the process stops.
 */
export function abortOnStopSignals(
  controller: AbortController,
  notify: (signal: NodeJS.Signals) => void,
  graceMs = SHUTDOWN_GRACE_MS,
): () => void {
  let received = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    received += 1;
    if (received === 1) {
      notify(signal);
      controller.abort();
      setTimeout(() => process.exit(130), graceMs).unref();
      return;
    }
    process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

/** The notice of a first signal as plain text on stderr, for commands that do not log. */
export function stderrNotice(stderr: NodeJS.WritableStream & { isTTY?: boolean }): (signal: NodeJS.Signals) => void {
  return (signal) =>
    stderr.write(`${stderr.isTTY ? '\n' : ''}netingest: ${signal} received: finishing what is in flight (again to stop at once)\n`);
}

/** Runs `work` with an AbortSignal wired to SIGINT/SIGTERM for its duration; `notify` tells the user. */
export async function withStopSignals<T>(
  notify: (signal: NodeJS.Signals) => void,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const detach = abortOnStopSignals(controller, notify);
  try {
    return await work(controller.signal);
  } finally {
    detach();
  }
}
