/**
 * The process's stdout and stderr may lose their reader at any time: `netingest run | head`, a `| tee` killed
 * by the same Ctrl-C, a log pipe that broke. Node then emits EPIPE as an 'error' event that nobody handles,
 * which kills the process with a stack trace in the middle of a run (its calls in flight unwritten, its
 * `runs` row left running, its exit code 1). Losing a reader loses only the text it would have read: the
 * database holds the run's outcome, so the command carries on and ends with its own exit code.
 */

/**
 * What a write answers when its reader is gone: EPIPE for a pipe, EIO for a terminal that hung up (an ssh
 * session that dropped: the run goes on after its SIGHUP to store its answers in flight, see signals.ts).
 */
const READER_GONE = new Set(['EPIPE', 'EIO']);

/** Makes a lost reader on `stream` end its output quietly instead of the process; any other error stays fatal. */
export function surviveClosedReader(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (READER_GONE.has(err.code ?? '')) return;
    // What Node does with an 'error' event nobody handles: an uncaught exception.
    throw err;
  });
}
