/**
 * SIGINT/SIGTERM during an export, enrich or query: the first signal aborts the write (the temporary file is
 * removed, nothing appears at --out) and the command exits 130; a second one exits at once, and the exit hook
 * of the file sink still removes the temporary file.
 */
export function abortOnStopSignals(controller: AbortController, stderr: NodeJS.WritableStream): () => void {
  let received = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    received += 1;
    if (received === 1) {
      stderr.write(`\nnetingest: ${signal} received: stopping (again to quit at once)\n`);
      controller.abort();
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

/** Runs `work` with an AbortSignal wired to SIGINT/SIGTERM for its duration. */
export async function withStopSignals<T>(stderr: NodeJS.WritableStream, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const detach = abortOnStopSignals(controller, stderr);
  try {
    return await work(controller.signal);
  } finally {
    detach();
  }
}
