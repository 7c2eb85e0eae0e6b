import { UsageError } from '../errors.ts';

/**
 * Environment variable setting the run lock's lease in seconds (default RUN_LOCK_DEFAULTS.leaseMs): how long
 * after a run's last heartbeat a run on another host sharing the database may take its lock over.
 */
export const LOCK_LEASE_ENV = 'NETINGEST_LOCK_LEASE_SECONDS';

/** The lease shortest allowed: below it, a pause of the event loop or the disk would cost a run its lock. */
const MIN_LEASE_SECONDS = 1;

/** The lease set in the environment, in ms, or undefined for the default; a bad value is a usage error. */
export function lockLeaseFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env[LOCK_LEASE_ENV]?.trim();
  if (!raw) return undefined;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds < MIN_LEASE_SECONDS) {
    throw new UsageError(`${LOCK_LEASE_ENV} must be a number of seconds, at least ${MIN_LEASE_SECONDS} (got ${JSON.stringify(raw)}).`);
  }
  return seconds * 1000;
}
