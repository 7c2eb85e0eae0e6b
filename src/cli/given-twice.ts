/** A one-value flag given twice; its own module, as the CLI entry loads it on every start (even --help). */
import { UsageError } from '../errors.ts';

/** Flags whose values are not quoted in a message: a database URL may hold a password, a token file's path be the token. */
const SECRET_FLAGS: ReadonlySet<string> = new Set(['--db', '--to', '--from', '--api-url', '--token-file', '--token', '--suspended-token']);

/** A flag given twice: neither value can be assumed the one meant. */
export function givenTwice(flag: string, values: readonly unknown[] = []): UsageError {
  const quoted = values.length > 0 && !SECRET_FLAGS.has(flag) ? ` (${values.join(', ')})` : '';
  return new UsageError(`${flag} is given more than once${quoted}: give it once`);
}
