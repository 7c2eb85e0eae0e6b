import { createApiClient } from '../api/client.ts';
import { resolveApiConfig } from '../api/config.ts';
import { reportedBalance, roundCredits } from '../credits/credit-meter.ts';
import { ConfigError } from '../errors.ts';

/** The account's balance as the service's free credit check tells it now. */
export interface LiveBalance {
  balance: number;
  totalCredits: number;
  creditsUsed: number;
}

/**
 * For `plan` and `status`: asks the free credit check (GET /v1/api/auth) when an API URL and token are set
 * (--api-url / --token-file or the environment). Null when they are not, or the service does not offer it: these
 * commands never fail for want of it, and make no paid call.
 */
export async function askLiveBalance(flags: { apiUrl?: string; tokenFile?: string }): Promise<LiveBalance | null> {
  let api;
  try {
    api = resolveApiConfig({ apiUrl: flags.apiUrl, tokenFile: flags.tokenFile });
  } catch (err) {
    if (err instanceof ConfigError) return null;
    throw err;
  }
  const client = createApiClient({ baseUrl: api.baseUrl, token: api.token });
  try {
    const c = await client.balance();
    return c === null ? null : { balance: roundCredits(reportedBalance(c)), totalCredits: c.total_credits, creditsUsed: c.credits_used };
  } finally {
    await client.close().catch(() => undefined);
  }
}
