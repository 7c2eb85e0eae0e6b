import { num, strict } from './answer-contract.ts';

/**
 * The credit counters every 200 carries (api.md, Limits): optional like any member, but read only as finite
 * numbers, never from a variant, since the credit caps rest on them.
 */
export const CREDIT_MEMBERS = {
  total_credits: strict(num()),
  credits_used: strict(num()),
  credits_remaining: strict(num()),
};
