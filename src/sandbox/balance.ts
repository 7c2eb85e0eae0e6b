import { API_PREFIX, type CreditCounters } from '../spec/types.ts';
import { hash32 } from './prng.ts';

/** The balance route the live service offers (known-behaviour.md): the token's counters, free of charge. */
export const BALANCE_PATH = `${API_PREFIX}/auth`;

/**
 * The 200 body of the balance route: `uid` fixed by seed and token (a hash: the token itself never appears),
 * `team`, and the counters the next paid answer would start from.
 */
export function balanceBody(seed: number, token: string, counters: CreditCounters): string {
  return JSON.stringify({
    uid: `u-${hash32(seed, `uid:${token}`).toString(16).padStart(8, '0')}`,
    team: 'sandbox',
    total_credits: counters.total_credits,
    credits_used: counters.credits_used,
    credits_remaining: counters.credits_remaining,
  });
}
