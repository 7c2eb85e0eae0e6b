/**
 * The api tests' shorthand for what the runner does about an error, read from the one policy table
 * (src/runner/error-policy.ts): pause everything, stop the run, retry, or fail the item.
 */
import { policyOf } from '../../src/runner/error-policy.ts';

export type ErrorVerb = 'retry' | 'throttle' | 'stop-run' | 'fail-item';

export function errorAction(err: unknown): ErrorVerb {
  const policy = policyOf(err);
  if (policy.pausesAll) return 'throttle';
  if (policy.stopsRun) return 'stop-run';
  return policy.retry ? 'retry' : 'fail-item';
}
