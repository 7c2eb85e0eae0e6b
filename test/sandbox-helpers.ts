import { afterEach } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptionsInput } from '../src/sandbox/server.ts';

/**
 * A factory of sandboxes on free ports (every input has data unless the options say otherwise), each stopped
 * after the test that started it. Call it at the top level of a test file.
 */
export function useSandboxes(): (options?: SandboxOptionsInput) => Promise<Sandbox> {
  const started: Sandbox[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((sb) => sb.stop()));
  });
  return async (options = {}) => {
    const sb = await startSandbox({ notFoundRate: 0, ...options });
    started.push(sb);
    return sb;
  };
}
