/**
 * A TCP proxy in front of the test cluster that a test cuts as a server going away would: connections dropped, none
 * accepted; at once, or (`cutOnSight`) as a given statement goes by on its way to the server, which never sees it.
 */
import net from 'node:net';

export interface CuttableProxy {
  /** `url` with the proxy's port: what the process under test connects to. */
  url: string;
  /** Drops every connection and stops listening: a new one is refused (ECONNREFUSED), as by a server that is down. */
  cut(): Promise<void>;
  /** Cuts (as cut()) when `text` is next sent to the server, before the server receives it; resolves once cut. */
  cutOnSight(text: string): Promise<void>;
}

/** A proxy to the server `url` names, listening on a free port of 127.0.0.1. */
export async function cuttableProxy(url: string): Promise<CuttableProxy> {
  const target = new URL(url);
  const sockets = new Set<net.Socket>();
  let watch: { text: Buffer; cut: () => void } | null = null;
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    track(client);
    track(upstream);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    // The tail of the last chunk is kept, so a statement split across two chunks is still seen.
    let tail = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      const seen = Buffer.concat([tail, chunk]);
      if (watch && seen.includes(watch.text)) return watch.cut();
      tail = seen.subarray(Math.max(0, seen.length - (watch?.text.length ?? 0)));
      upstream.write(chunk);
    });
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(url);
  proxied.port = String((server.address() as net.AddressInfo).port);
  const cut = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  return {
    url: proxied.toString(),
    cut,
    cutOnSight: (text) => new Promise<void>((resolve) => {
      watch = { text: Buffer.from(text), cut: () => { watch = null; void cut().then(resolve); } };
    }),
  };
}
