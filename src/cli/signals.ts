/** How long in-flight calls may take to finish after the first SIGINT/SIGTERM before the process exits. */
export const SHUTDOWN_GRACE_MS = 20_000;

/**
 * First SIGINT/SIGTERM: abort the controller so the run stops sending, lets in-flight calls finish and writes
 * everything. A second signal, or the grace running out, exits at once with 130: every write is a whole
 * SQLite transaction, so the database stays consistent wherever the process stops.
 */
export function handleStopSignals(onFirst: () => void, graceMs = SHUTDOWN_GRACE_MS): () => void {
  let received = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    received += 1;
    if (received === 1) {
      process.stderr.write(`\nnetingest: ${sig} received: finishing calls in flight (again to stop at once)\n`);
      onFirst();
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
