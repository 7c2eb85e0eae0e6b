/**
 * Debian's headless Chromium driven over its DevTools pipe (`--remote-debugging-pipe`: fd 3 in, fd 4 out,
 * messages ended by NUL), no browser downloaded: opens a page, records console errors, exceptions and every
 * request, evaluates an expression and takes a full-page screenshot.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** The browser to drive, or null; NETINGEST_CHROMIUM names another. */
export const chromiumPath: string | null = [process.env.NETINGEST_CHROMIUM, ...CANDIDATES].find((p): p is string => !!p && existsSync(p)) ?? null;

/** Why the browser tests skip here (CI sets NETINGEST_REQUIRE_CHROMIUM=1: there they must run). */
export const chromiumSkipReason = chromiumPath ? '' : `no Chromium at ${CANDIDATES.join(', ')} (apt-get install chromium)`;
if (!chromiumPath && process.env.NETINGEST_REQUIRE_CHROMIUM === '1') throw new Error(`NETINGEST_REQUIRE_CHROMIUM=1 but ${chromiumSkipReason}`);
if (!chromiumPath) console.log(`report browser tests skipped: ${chromiumSkipReason}`);

export interface PageVisit<T> {
  consoleErrors: string[];
  /** Every URL the page asked for, the page's own file excepted. */
  requests: string[];
  value: T;
  screenshotPng: Buffer;
}

interface Message { id?: number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: { message: string }; sessionId?: string }

/** Opens `url` in a new headless Chromium, evaluates `expression` (JSON-serialisable result) and closes it. */
export async function visitPage<T>(url: string, expression: string, viewport = { width: 1040, height: 900 }): Promise<PageVisit<T>> {
  if (!chromiumPath) throw new Error(chromiumSkipReason);
  const profile = mkdtempSync(join(tmpdir(), 'netingest-chromium-'));
  const child = spawn(chromiumPath, [
    '--headless', '--remote-debugging-pipe', '--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
    '--disable-extensions', '--disable-background-networking', '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`,
    'about:blank',
  ], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  const cdp = new Cdp(child);
  try {
    const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
    const s = sessionId as string;
    const consoleErrors: string[] = [];
    const requests: string[] = [];
    cdp.on((m) => {
      if (m.sessionId !== s) return;
      const p = m.params ?? {};
      if (m.method === 'Runtime.consoleAPICalled' && (p.type === 'error' || p.type === 'warning')) consoleErrors.push(JSON.stringify(p.args));
      if (m.method === 'Runtime.exceptionThrown') consoleErrors.push(JSON.stringify(p.exceptionDetails));
      if (m.method === 'Log.entryAdded' && (p.entry as { level: string }).level === 'error') consoleErrors.push((p.entry as { text: string }).text);
      if (m.method === 'Network.requestWillBeSent') {
        const requested = (p.request as { url: string }).url;
        if (requested !== url) requests.push(requested);
      }
    });
    for (const domain of ['Page', 'Runtime', 'Log', 'Network']) await cdp.send(`${domain}.enable`, {}, s);
    await cdp.send('Emulation.setDeviceMetricsOverride', { ...viewport, deviceScaleFactor: 1, mobile: false }, s);
    const loaded = cdp.waitFor((m) => m.sessionId === s && m.method === 'Page.loadEventFired');
    await cdp.send('Page.navigate', { url }, s);
    await loaded;
    const evaluated = await cdp.send('Runtime.evaluate', { expression, returnByValue: true }, s);
    if (evaluated.exceptionDetails) throw new Error(`evaluate: ${JSON.stringify(evaluated.exceptionDetails)}`);
    const shot = await cdp.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true }, s);
    await cdp.send('Browser.close', {}).catch(() => undefined);
    return { consoleErrors, requests, value: (evaluated.result as { value: T }).value, screenshotPng: Buffer.from(shot.data as string, 'base64') };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(undefined)));
    // Its helper processes may still be writing the profile a moment after the browser exits: a leftover folder
    // in the temporary directory is not the test's failure.
    try {
      rmSync(profile, { recursive: true, force: true });
    } catch {
      /* left to the system's temporary directory cleanup */
    }
  }
}

/** The DevTools protocol over the pipe. */
class Cdp {
  private next = 1;
  private buffer = '';
  private readonly pending = new Map<number, { resolve: (r: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  private readonly listeners: Array<(m: Message) => void> = [];
  private readonly input: Writable;
  private stderr = '';

  constructor(child: ChildProcess) {
    this.input = child.stdio[3] as Writable;
    (child.stdio[4] as Readable).setEncoding('utf8').on('data', (chunk: string) => this.receive(chunk));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (this.stderr = (this.stderr + d).slice(-4000)));
    child.once('exit', (code) => {
      for (const p of this.pending.values()) p.reject(new Error(`chromium exited (${code}): ${this.stderr}`));
      this.pending.clear();
    });
  }

  send(method: string, params: Record<string, unknown>, sessionId?: string): Promise<Record<string, unknown>> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.input.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + '\0');
    });
  }

  on(listener: (m: Message) => void): void {
    this.listeners.push(listener);
  }

  waitFor(match: (m: Message) => boolean): Promise<Message> {
    return new Promise((resolve) => this.on((m) => match(m) && resolve(m)));
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    for (let end = this.buffer.indexOf('\0'); end >= 0; end = this.buffer.indexOf('\0')) {
      const message = JSON.parse(this.buffer.slice(0, end)) as Message;
      this.buffer = this.buffer.slice(end + 1);
      if (message.id !== undefined) {
        const p = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.error) p?.reject(new Error(message.error.message));
        else p?.resolve(message.result ?? {});
      } else {
        for (const l of this.listeners) l(message);
      }
    }
  }
}
