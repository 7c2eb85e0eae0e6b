import { RUN_DEFAULTS } from '../runner/run-options.ts';

/** Wind-down time after the first stop signal: longer than a call, so a charged call is written, not paid twice. */
export const SHUTDOWN_GRACE_MS = RUN_DEFAULTS.requestTimeoutMs + 10_000;

/**
 * The signals that stop a command gracefully. SIGHUP too: a dropped terminal would otherwise kill the process at once,
 * losing answers in flight (paid for, not written) or leaving an export's temporary file.
 */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Tells the user of a stop signal: `again` false for the first (work winds down), true for a second (exit at once). */
export type StopNotice = (signal: NodeJS.Signals, again: boolean) => void;

/** The stop-signal handler of the command's work while it runs (withStopSignals): none as it starts and after. */
let active: ((signal: NodeJS.Signals) => void) | null = null;
let caught = false;

/**
 * Installed once as the process starts (bin.ts): a stop signal outside a command's work (while it starts, or writes its
 * summary once its work is done) exits 130 as documented, saying so, rather than node's silent default (143 on SIGTERM).
 */
export function catchStopSignals(stderr: NodeJS.WritableStream): void {
  caught = true;
  const onSignal = (signal: NodeJS.Signals) => {
    if (active) return active(signal);
    stderr.write(`netingest: ${signal} received: stopping at once\n`);
    process.exit(130);
  };
  for (const name of STOP_SIGNALS) process.on(name, onSignal);
}

/**
 * Runs `work` with an AbortSignal aborted by the first stop signal (a run stops sending; calls in flight are written).
 * A second signal or the grace running out exits 130 at once: every write is a whole transaction or a temporary file,
 * so nothing is left half-written.
 */
export async function withStopSignals<T>(notify: StopNotice, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let received = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    received += 1;
    if (received === 1) {
      notify(signal, false);
      controller.abort();
      setTimeout(() => process.exit(130), SHUTDOWN_GRACE_MS).unref();
      return;
    }
    // Said, so the user knows the exit was not a crash and the prompt does not follow a half line.
    try {
      notify(signal, true);
    } finally {
      process.exit(130);
    }
  };
  const outer = active;
  active = onSignal;
  // Without catchStopSignals (a library caller, a test in process), the handlers are this work's own.
  if (!caught) for (const name of STOP_SIGNALS) process.on(name, onSignal);
  try {
    return await work(controller.signal);
  } finally {
    active = outer;
    if (!caught) for (const name of STOP_SIGNALS) process.off(name, onSignal);
  }
}

/** The notice of a first signal as plain text on stderr, for commands that do not log. */
export function stderrNotice(stderr: NodeJS.WritableStream & { isTTY?: boolean }): StopNotice {
  return (signal, again) =>
    stderr.write(
      `${stderr.isTTY ? '\n' : ''}netingest: ${signal} received${again ? ' again: stopping at once' : ': finishing what is in flight (again to stop at once)'}\n`,
    );
}
