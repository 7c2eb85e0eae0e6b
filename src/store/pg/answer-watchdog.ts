/**
 * A server cut off silently (a partition, a frozen host, a proxy that holds on) never answers a sent statement, and
 * keepalive ends it only after ~11 minutes, or never while something between keeps the socket alive.
 */
import type pg from 'pg';

/** node-postgres's Client fields read here (pg 8): the statement being answered, and those sent behind it. */
interface ClientQueues {
  _activeQuery: unknown;
  _sentQueryQueue?: readonly unknown[];
  connection: { stream: NodeJS.ReadableStream & { destroy(err?: Error): void } };
}

/** Each watched connection's grace, and its bound: null while a snapshot lifts the statement timeout. */
const watches = new WeakMap<object, { graceMs: number; sessionBoundMs: number; boundMs: number | null }>();

/**
 * Ends `client`'s connection (ETIMEDOUT, so DB_CONNECTION_LOST) once a statement has waited its statement timeout plus
 * `graceMs` with no byte from the server: a live server cancels at the timeout and says so.
 */
export function watchAnswers(client: pg.Client, statementTimeoutMs: number, graceMs: number): void {
  const watch = { graceMs, sessionBoundMs: statementTimeoutMs + graceMs, boundMs: (statementTimeoutMs + graceMs) as number | null };
  watches.set(client, watch);
  // Silence counts from the last check that found nothing owed: at most this much before the statement went out.
  const checkEveryMs = Math.min(1000, Math.max(20, Math.floor(watch.sessionBoundMs / 4)));
  const c = client as unknown as ClientQueues;
  let heardAt = performance.now();
  let checkedAt = heardAt;
  const check = () => {
    const now = performance.now();
    // A check far behind its time means this process was stalled, the server's bytes perhaps read only now.
    const stalled = now - checkedAt > 2 * checkEveryMs;
    checkedAt = now;
    const owed = c._activeQuery != null || (c._sentQueryQueue?.length ?? 0) > 0;
    if (!owed || stalled || watch.boundMs === null) heardAt = now;
    else if (now - heardAt >= watch.boundMs) {
      const seconds = Math.round(watch.boundMs / 1000);
      c.connection.stream.destroy(Object.assign(new Error(`no answer from the server for ${seconds} s`), { code: 'ETIMEDOUT' }));
    }
  };
  client.once('connect', () => {
    c.connection.stream.on('data', () => void (heardAt = performance.now()));
    const timer = setInterval(check, checkEveryMs).unref();
    client.once('end', () => clearInterval(timer));
  });
}

/** `fn` while `client`'s transaction runs under `statementTimeoutMs` (0: none, as an export's long sort needs). */
export async function withAnswerBound<T>(client: pg.ClientBase, statementTimeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const watch = watches.get(client);
  if (!watch) return fn();
  watch.boundMs = statementTimeoutMs > 0 ? statementTimeoutMs + watch.graceMs : null;
  try {
    return await fn();
  } finally {
    watch.boundMs = watch.sessionBoundMs;
  }
}
