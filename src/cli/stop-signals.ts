/**
 * The stop signals' one handler for the process's life. dist/bin.js is built from bin.ts apart, with this file bundled
 * in, so the handlers are in place before node reads any other file of the CLI. The split build holds a second copy of
 * this module: a command's work reaches the handler slot through `globalThis.netingestStopSignals` (signals.ts).
 */
/**
 * The signals that stop a command gracefully. SIGHUP too: a dropped terminal would otherwise kill the process at once,
 * losing answers in flight (paid for, not written) or leaving an export's temporary file.
 */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Where a command's work sets its stop-signal handler while it runs (withStopSignals): none as it starts and after. */
export interface StopSignalSlot {
  active: ((signal: NodeJS.Signals) => void) | null;
}

declare global {
  // Set by catchStopSignals in the CLI's process only; a library caller's process has none.
  var netingestStopSignals: StopSignalSlot | undefined;
}

/**
 * Installed once as the process starts (bin.ts, its first statement): a stop signal outside a command's work (while it
 * starts, or writes its summary once its work is done) exits 130 as documented, saying so, rather than node's silent
 * default (143 on SIGTERM).
 */
export function catchStopSignals(stderr: NodeJS.WritableStream): void {
  const slot: StopSignalSlot = { active: null };
  globalThis.netingestStopSignals = slot;
  const onSignal = (signal: NodeJS.Signals) => {
    if (slot.active) return slot.active(signal);
    stderr.write(`netingest: ${signal} received: stopping at once\n`);
    process.exit(130);
  };
  for (const name of STOP_SIGNALS) process.on(name, onSignal);
}
