/** The network's host, the one site netingest asks about: `network`, or the live host in NETINGEST_NETWORK_HOST. */
import { ConfigError } from '../errors.ts';
import { DEFAULT_NETWORK_HOST } from '../spec/types.ts';

/** Environment variable naming the network's host (e.g. `example.com`, no scheme, no `www.`). */
export const NETWORK_HOST_ENV = 'NETINGEST_NETWORK_HOST';

const DOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z][a-z0-9-]*[a-z0-9]$/;

/** The configured host, lower-case, without `www.`; a ConfigError naming the variable unless a plain domain name. */
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
