import { RUN_DEFAULTS } from '../runner/run-options.ts';
// A constant only: dist/bin.js is built apart with its own copy, and the handler slot is on globalThis, not module state.
import { STOP_SIGNALS } from './stop-signals.ts';

/** Wind-down time after the first stop signal: longer than a call, so a charged call is written, not paid twice. */
export const SHUTDOWN_GRACE_MS = RUN_DEFAULTS.requestTimeoutMs + 10_000;

/** Tells the user of a stop signal: `again` false for the first (work winds down), true for a second (exit at once). */
export type StopNotice = (signal: NodeJS.Signals, again: boolean) => void;

/**
 * Runs `work` with an AbortSignal the first stop signal aborts (a run stops sending; calls in flight are written). A
 * second signal or the grace running out exits 130 at once: every write is a whole transaction or a temporary file.
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
  // Without catchStopSignals (a library caller, a test in process), the handlers are this work's own.
  const slot = globalThis.netingestStopSignals;
  const outer = slot?.active ?? null;
  if (slot) slot.active = onSignal;
  else for (const name of STOP_SIGNALS) process.on(name, onSignal);
  try {
    return await work(controller.signal);
  } finally {
    if (slot) slot.active = outer;
    else for (const name of STOP_SIGNALS) process.off(name, onSignal);
  }
}

/** The notice of a first signal as plain text on stderr, for commands that do not log. */
export function stderrNotice(stderr: NodeJS.WritableStream & { isTTY?: boolean }): StopNotice {
  return (signal, again) =>
    stderr.write(
      `${stderr.isTTY ? '\n' : ''}netingest: ${signal} received${again ? ' again: stopping at once' : ': finishing what is in flight (again to stop at once)'}\n`,
    );
}
