/** The stop signals' one handler for the process's life, apart from signals.ts so a start loads nothing else (`--help` reads no runner). */
/**
 * The signals that stop a command gracefully. SIGHUP too: a dropped terminal would otherwise kill the process at once,
 * losing answers in flight (paid for, not written) or leaving an export's temporary file.
 */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

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

/** Sets the handler of the work now running (null: none); returns the one before it. */
export function setStopHandler(handler: ((signal: NodeJS.Signals) => void) | null): ((signal: NodeJS.Signals) => void) | null {
  const before = active;
  active = handler;
  return before;
}

/** Whether catchStopSignals holds the process's stop signals. */
export function stopSignalsCaught(): boolean {
  return caught;
}
