/**
 * The process's stdout and stderr may lose their reader at any time: `netingest run | head`, a `| tee` killed
 * by the same Ctrl-C, a log pipe that broke. Node then emits EPIPE as an 'error' event that nobody handles,
 * which kills the process with a stack trace in the middle of a run (its calls in flight unwritten, its
 * `runs` row left running, its exit code 1). Losing a reader loses only the text it would have read: the
 * database holds the run's outcome, so the command carries on and ends with its own exit code.
 */

/** Makes EPIPE on `stream` end its output quietly instead of the process; any other error stays fatal. */
export function surviveClosedReader(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') return;
    // What Node does with an 'error' event nobody handles: an uncaught exception.
    throw err;
  });
}
