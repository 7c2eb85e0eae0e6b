/**
 * A server (or a proxy in front of it) that answers `102 Processing` over and over and never a final status:
 * undici restarts its headers timer on every 1xx, so only a deadline over the whole exchange ends the call, and
 * with it a run that was told to stop.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createTypedClient } from '../support/typed-client.ts';
import { TimeoutError } from '../../src/api/errors.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { count, csv, query, useWorkspaces } from '../support/run-helpers.ts';

const TOKEN = 'sk_test_informational_7d21';
const newWorkspace = useWorkspaces();
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/**
 * A raw HTTP server that answers every request with a `102 Processing` every 50 ms, for ever; `requests` counts
 * the operation calls (not the run's free balance check).
 */
async function processingForever(): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (chunk: Buffer) => {
      if (!chunk.toString('latin1').startsWith('GET /v1/api/auth')) requests += 1;
      const beat = setInterval(() => (socket.destroyed ? clearInterval(beat) : socket.write('HTTP/1.1 102 Processing\r\n\r\n')), 50);
      socket.on('close', () => clearInterval(beat));
    });
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  const close = server.close.bind(server);
  server.close = ((cb?: (err?: Error) => void) => {
    sockets.forEach((s) => s.destroy());
    return close(cb);
  }) as typeof server.close;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

describe('a server that sends only 1xx responses', () => {
  it('times the call out at its deadline, as a retryable TimeoutError', async () => {
    const server = await processingForever();
    const client = createTypedClient({ baseUrl: server.url, token: TOKEN, timeoutMs: 400 });
    try {
      const err = await client.postDetails('https://www.network.com/posts/x-1').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TimeoutError);
      expect((err as TimeoutError).message).toMatch(/no complete response within 400 ms/);
    } finally {
      await client.close();
    }
  });

  it('a run told to stop while its calls get only 1xx ends at the call deadline, its row closed and its lock released', { timeout: 30_000 }, async () => {
    const server = await processingForever();
    const ws = await newWorkspace();
    await ws.write('posts.csv', csv(['post_url'], [['https://www.network.com/posts/a-1'], ['https://www.network.com/posts/b-2']]));
    const file = await ws.job('posts', {
      operation: 'post-details',
      input: { csv: 'posts.csv', column: 'post_url' },
      rate: { requestsPerMinute: 600_000, concurrency: 2 },
      retry: { retries: 0 },
    });
    const controller = new AbortController();
    const done = runJobs({
      dbPath: ws.db,
      jobs: await ws.load(file),
      api: { baseUrl: server.url, token: TOKEN },
      requestTimeoutMs: 1_500,
      signal: controller.signal,
    });
    // The run's first call is on the wire (a 102 comes back every 50 ms): stop it as SIGTERM does.
    await new Promise<void>((resolve) => {
      const check = setInterval(() => server.requests() > 0 && (clearInterval(check), resolve()), 10);
    });
    controller.abort();
    const summary = await done;
    expect(summary.status).toBe('interrupted');
    expect(query(ws, 'SELECT status FROM runs')).toEqual([{ status: 'interrupted' }]);
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
  });
});
