/**
 * The network's host: the one site whose company, post and job pages netingest asks about. api.md writes the
 * brand as `network`; a user of the live service names its real host once, in NETINGEST_NETWORK_HOST.
 * Every page URL on another host is refused before a call.
 */
import { ConfigError } from '../errors.ts';
import { DEFAULT_NETWORK_HOST } from '../spec/types.ts';

/** Environment variable naming the network's host (e.g. `example.com`, no scheme, no `www.`). */
export const NETWORK_HOST_ENV = 'NETINGEST_NETWORK_HOST';

const DOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z][a-z0-9-]*[a-z0-9]$/;

/**
 * The configured host, lower-case, without `www.` (the canonical form adds it back). Throws a ConfigError
 * naming the variable when the value is not a plain domain name.
 */
export function networkHost(env: NodeJS.ProcessEnv = process.env): string {
  const raw = env[NETWORK_HOST_ENV]?.trim();
  if (raw === undefined || raw === '') return DEFAULT_NETWORK_HOST;
  const host = raw.toLowerCase().replace(/\.$/, '').replace(/^www\./, '');
  if (!DOMAIN.test(host)) {
    throw new ConfigError(
      `${NETWORK_HOST_ENV} must be a plain domain name such as ${DEFAULT_NETWORK_HOST} (no scheme, path or port); got ${JSON.stringify(raw.slice(0, 100))}.`,
    );
  }
  return host;
}
