import type { ApiClient } from '../api/types.ts';
import { reportedBalance, roundCredits } from '../credits/credit-meter.ts';
import type { CreditGuard } from '../credits/credit-guard.ts';
import type { Logger } from './logger.ts';

/**
 * Before a run's first paid call: asks the service's free credit check and, when it answers, starts the credit
 * guard from it, so the first call no longer goes alone, its cost is exact, and a run whose balance cannot pay
 * makes no call. When the service does not offer it, the run goes on as without it. Also says how many credits
 * the account used since the last answer this database stored: calls lost in flight (a kill), or use elsewhere.
 */
export async function seedFromBalance(
  client: ApiClient,
  guard: CreditGuard,
  lastCreditsUsed: number | null,
  signal: AbortSignal,
  logger: Logger,
): Promise<boolean> {
  const counters = await client.balance(signal);
  if (counters === null || !guard.seed(counters)) {
    logger.info('balance not offered by the API (GET /v1/api/auth): learned from the first answers instead');
    return false;
  }
  const since = lastCreditsUsed === null ? undefined : roundCredits(counters.credits_used - lastCreditsUsed);
  logger.info('balance read before the first call', {
    balance: roundCredits(reportedBalance(counters)),
    total: counters.total_credits,
    used_since_last_answer: since !== undefined && since > 0 ? since : undefined,
  });
  return true;
}
