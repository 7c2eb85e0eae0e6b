/**
 * A TCP proxy in front of the test cluster that a test cuts as a server going away would: connections dropped, none
 * accepted; at once, or (`cutOnSight`) as a given statement goes by on its way to the server, which never sees it. It
 * can also hold that statement back (`pauseOnSight`), the process under test stopped just before it.
 */
import net from 'node:net';

export interface CuttableProxy {
  /** `url` with the proxy's port: what the process under test connects to. */
  url: string;
  /** Drops every connection and stops listening: a new one is refused (ECONNREFUSED), as by a server that is down. */
  cut(): Promise<void>;
  /** Cuts (as cut()) when `text` is next sent to the server, before the server receives it; resolves once cut. */
  cutOnSight(text: string): Promise<void>;
  /** Holds back what its connection sends from `text` on; resolves once seen, with what lets it through. */
  pauseOnSight(text: string): Promise<() => void>;
  /**
   * Ends the one connection that next sends `text`, the proxy still listening: with `answered`, once the server has
   * answered it (that answer not passed on), else before the server sees it. Resolves once ended.
   */
  endOnSight(text: string, answered: boolean): Promise<void>;
}

/**
 * What the proxy does on seeing a watched text in a connection's data, held from there on until `release`; `end` ends
 * that connection, at once or (`answered`) as the server's next bytes come, which are not passed on.
 */
type Watch = { text: Buffer; onSight: (release: () => void, end: (answered: boolean) => Promise<void>) => void };

/** A proxy to the server `url` names, listening on a free port of 127.0.0.1. */
export async function cuttableProxy(url: string): Promise<CuttableProxy> {
  const target = new URL(url);
  const sockets = new Set<net.Socket>();
  let watch: Watch | null = null;
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
    let held: Buffer[] | null = null;
    let endOnAnswer: (() => void) | null = null;
    const end = (answered: boolean) => new Promise<void>((resolve) => {
      upstream.once('close', () => resolve());
      if (answered) endOnAnswer = () => upstream.destroy();
      else upstream.destroy();
    });
    client.on('data', (chunk: Buffer) => {
      if (held) return void held.push(chunk);
      const seen = Buffer.concat([tail, chunk]);
      const sighted = watch && seen.includes(watch.text) ? watch : null;
      if (sighted) {
        watch = null;
        held = [chunk];
        const release = () => {
          for (const c of held ?? []) upstream.write(c);
          held = null;
        };
        return sighted.onSight(release, end);
      }
      tail = seen.subarray(Math.max(0, seen.length - (watch?.text.length ?? 0)));
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => (endOnAnswer ? endOnAnswer() : client.write(chunk)));
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
      watch = { text: Buffer.from(text), onSight: () => void cut().then(resolve) };
    }),
    pauseOnSight: (text) => new Promise<() => void>((resolve) => {
      watch = { text: Buffer.from(text), onSight: resolve };
    }),
    endOnSight: (text, answered) => new Promise<void>((resolve) => {
      watch = {
        text: Buffer.from(text),
        onSight: (release, end) => {
          void end(answered).then(resolve);
          if (answered) release();
        },
      };
    }),
  };
}
