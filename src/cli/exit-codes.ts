import { NetingestError, UsageError } from '../errors.ts';

/** The documented exit codes (README, "Exit codes"). */
export const EXIT = {
  ok: 0,
  fatal: 1,
  usage: 2,
  credits: 3,
  locked: 4,
  failedItems: 5,
  interrupted: 130,
} as const;

/** Maps an error that escaped a command to its exit code; errors choose by their class and code. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof NetingestError) {
    // Another run holds our lock, or another process holds SQLite's own lock past the busy timeout.
    if (err.code === 'LOCKED' || err.code === 'DB_LOCKED') return EXIT.locked;
    if (err.code === 'OUT_OF_CREDITS') return EXIT.credits;
    if (err.code === 'INTERRUPTED') return EXIT.interrupted;
  }
  return EXIT.fatal;
}
