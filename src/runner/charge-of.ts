import { ApiSchemaError, isApiError } from '../api/errors.ts';
import type { Charge } from '../credits/credit-guard.ts';

/**
 * What a failed attempt was charged, for the credit guard: the counters of a wrong-shape body that still carries
 * them; `'unread'` for any other failure that came with a 200 (counters missing or not numbers, a body over the
 * size limit, not JSON, cut off or not decodable: the service answered, so the call was most likely billed);
 * null when no 200 came (nothing billed).
 */
export function chargeOfFailure(err: unknown): Charge {
  if (err instanceof ApiSchemaError && err.credits) return err.credits;
  return isApiError(err) && err.paid ? 'unread' : null;
}
