/** A TCP proxy in front of the test cluster that a test cuts as a server going away would: connections dropped, none accepted. */
import net from 'node:net';

export interface CuttableProxy {
  /** `url` with the proxy's port: what the process under test connects to. */
  url: string;
  /** Drops every connection and stops listening: a new one is refused (ECONNREFUSED), as by a server that is down. */
  cut(): Promise<void>;
}

/** A proxy to the server `url` names, listening on a free port of 127.0.0.1. */
export async function cuttableProxy(url: string): Promise<CuttableProxy> {
  const target = new URL(url);
  const sockets = new Set<net.Socket>();
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
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(url);
  proxied.port = String((server.address() as net.AddressInfo).port);
  return {
    url: proxied.toString(),
    cut: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
