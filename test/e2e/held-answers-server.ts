/**
 * A stand-in for the API's post-details on 127.0.0.1 whose answers can be held back: the calls stay in flight
 * (sent, charged, unanswered) for as long as a test needs, to stop or suspend the CLI at that moment. It keeps
 * a credit ledger per token and logs every request with the token it came with.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { csv, makeWorkspace, postUrls, type Workspace } from '../support/run-helpers.ts';

export interface LoggedCall {
  token: string;
  postUrl: string;
  /** Set once the answer was sent: the call was charged then. */
  answered: boolean;
}

export interface HeldAnswersServer {
  /** Base URL, to give as NETINGEST_API_URL. */
  url: string;
  calls: LoggedCall[];
  /** Calls received and not answered yet. */
  heldCount(): number;
  /**
   * From now on, answers wait for release(); with `afterCalls`, only those of the calls after the first
   * `afterCalls`; with `token`, only those of calls sent with it.
   */
  hold(afterCalls?: number, token?: string): void;
  /** Answers every held call; later calls are answered at once unless `keepHolding`. */
  release(keepHolding?: boolean): void;
  close(): Promise<void>;
}

const TOTAL_CREDITS = 100_000;

export async function startHeldAnswersServer(): Promise<HeldAnswersServer> {
  const calls: LoggedCall[] = [];
  const used = new Map<string, number>();
  let holding = false;
  let holdFrom = 0;
  let holdToken: string | null = null;
  let waiting: Array<() => void> = [];

  const answer = (call: LoggedCall, res: ServerResponse) => {
    const creditsUsed = (used.get(call.token) ?? 0) + 1;
    used.set(call.token, creditsUsed);
    call.answered = true;
    const activity = /activity-(\d+)/.exec(call.postUrl)?.[1] ?? '0';
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        success: true,
        message: 'ok',
        PostId: `activity-${activity}`,
        author: { name: 'Ada', headline: 'Engineer', network_url: 'https://www.network.com/in/ada', profile_image: '' },
        post: { timestamp: '22-11-2026', text_content: `post ${activity}`, hashtags: null, post_media_description: '', post_media_url: [] },
        engagement: { reactions: 1, comments_count: 0 },
        total_credits: TOTAL_CREDITS,
        credits_used: creditsUsed,
        credits_remaining: TOTAL_CREDITS - creditsUsed,
      }),
    );
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/v1/api/post-details') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
      return;
    }
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    const call: LoggedCall = { token, postUrl: url.searchParams.get('url') ?? '', answered: false };
    calls.push(call);
    if (holding && calls.length > holdFrom && (holdToken === null || token === holdToken)) waiting.push(() => answer(call, res));
    else answer(call, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    heldCount: () => waiting.length,
    hold: (afterCalls = 0, token) => {
      holding = true;
      holdToken = token ?? null;
      holdFrom = calls.length + afterCalls;
    },
    release: (keepHolding = false) => {
      holding = keepHolding;
      holdFrom = calls.length;
      const now = waiting;
      waiting = [];
      for (const send of now) send();
    },
    close: () => {
      waiting = [];
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A held-answers server and a workspace with a post-details job of `tasks` posts, both closed by `cleanups`. */
export async function heldPostsJob(
  tasks: number,
  concurrency: number,
  cleanups: Array<() => Promise<void>>,
): Promise<{ server: HeldAnswersServer; ws: Workspace; job: string }> {
  const server = await startHeldAnswersServer();
  const ws = await makeWorkspace();
  cleanups.push(() => server.close(), () => ws.cleanup());
  await ws.write('posts.csv', csv(['post_url'], postUrls(tasks).map((u) => [u])));
  const job = await ws.job('posts', {
    operation: 'post-details',
    input: { csv: 'posts.csv', column: 'post_url' },
    rate: { requestsPerMinute: 600_000, concurrency },
    retry: { retries: 2, minTimeoutMs: 10, maxTimeoutMs: 50 },
  });
  return { server, ws, job };
}
