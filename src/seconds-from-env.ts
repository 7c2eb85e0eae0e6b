import { UsageError } from './errors.ts';

/** The seconds the environment variable `name` sets, in ms, or undefined for the default; a bad value is a usage error. */
export function secondsFromEnv(name: string, min: number, env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds < min) {
    throw new UsageError(`${name} must be a number of seconds, at least ${min} (got ${JSON.stringify(raw)}).`);
  }
  return seconds * 1000;
}
