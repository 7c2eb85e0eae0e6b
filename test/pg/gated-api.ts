/** An API for worker tests on PostgreSQL that lets through only as many requests as the test allows. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An API in front of the sandbox that forwards only the requests it is allowed and holds the others: the test
 * decides how many calls go through before it does the next thing. Requests whose path `free` accepts (the free
 * balance check, say) go through at once and count for nothing.
 */
export async function gatedApi(target: string, options: { free?: (path: string) => boolean } = {}): Promise<{ url: string; allow(requests: number): void; held(): number; stop(): Promise<void> }> {
  let allowance = 0;
  const held: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const forward = () => {
      const upstream = http.request(new URL(req.url!, target), { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    if (options.free?.(req.url!)) return forward();
    held.push(forward);
    // A request whose client went away (killed) while held is never forwarded: it never reached the API.
    res.on('close', () => held.includes(forward) && held.splice(held.indexOf(forward), 1));
    pass();
  });
  const pass = () => {
    while (allowance > 0 && held.length > 0) {
      allowance -= 1;
      held.shift()!();
    }
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => held.length,
    allow(requests) {
      allowance = requests;
      pass();
    },
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
