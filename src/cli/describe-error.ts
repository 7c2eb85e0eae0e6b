import { NetingestError } from '../errors.ts';

/** One line for the user: our own errors by code and message, anything else without a stack trace. */
export function describeError(err: unknown): string {
  if (err instanceof NetingestError) return `${err.message} [${err.code}]`;
  if (err instanceof Error) return `unexpected error: ${err.message}`;
  return `unexpected error: ${String(err)}`;
}
