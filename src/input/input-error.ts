import { UsageError } from '../errors.ts';

/** An input file that cannot be used at all (missing, unreadable, empty, unknown column): the user must fix it. */
export class InputFileError extends UsageError {
  /** `file`: the file as the user named it. */
  constructor(readonly file: string, message: string, options?: { cause?: unknown }) {
    super(`${file}: ${message}`, 'INPUT_INVALID', options);
  }
}

/** Turns a file-system error into the user's words, without a stack trace. */
export function describeFsError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') return 'file not found';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'is a directory, not a file';
  return err instanceof Error ? err.message : String(err);
}
