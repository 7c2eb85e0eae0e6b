import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptionsInput } from '../../src/sandbox/server.ts';

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

/**
 * Starts stand-ins for the API on 127.0.0.1 that answer as `handler` says (what the sandbox never does: a body
 * of another shape, a chunked flood); each is closed, open connections included, after the test. Call it at the
 * top level of a test file; each start resolves to the service's base URL.
 */
export function useFakeServices(): (handler: RequestListener) => Promise<string> {
  const started: Server[] = [];
  afterEach(async () => {
    await Promise.all(
      started.splice(0).map((server) => {
        server.closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      }),
    );
  });
  return async (handler) => {
    const server = createServer(handler);
    started.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
}
