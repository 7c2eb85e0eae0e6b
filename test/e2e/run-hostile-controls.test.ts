/**
 * A hostile service (or proxy) names an answer's member with ESC, BEL and C1 sequences: the run's summary, its log
 * lines (text and JSON) and `status` print the name with those characters blanked, never as the terminal would run them.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { FAST_RATE, FAST_RETRY, csv, inProcess, postUrls, useWorkspaces } from '../support/run-helpers.ts';

const TOKEN = 'hostile-controls-token-81f3';
/** Clear screen, red, window title ended by BEL, an 8-bit CSI: the author's URL under this name. */
const HOSTILE = '\u001b[2J\u001b[31mRED\u001b]0;PWNED\u0007\u009b0m_url';
const SHOWN = ' [2J [31mRED ]0;PWNED  0m_url';
/** Any control a terminal acts on: C0 but tab and line feed, DEL, C1. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

const newWorkspace = useWorkspaces();
const startFake = useFakeServices();

/** Answers every post-details call with the author's URL under the hostile member name; each answer costs 1 credit. */
async function hostileService(): Promise<string> {
  let used = 0;
  return startFake((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/v1/api/auth') return void res.writeHead(404).end('{}');
      used += 1;
      const activity = /activity-(\d+)/.exec(url.searchParams.get('url') ?? '')?.[1] ?? '0';
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        success: true, message: 'ok', PostId: `activity-${activity}`,
        author: { name: 'Jane', headline: 'Engineer', [HOSTILE]: 'https://www.network.com/in/jane', profile_image: '' },
        post: { timestamp: '03-11-2024', text_content: 'Hello', hashtags: null, post_media_description: '', post_media_url: [] },
        engagement: { reactions: 3, comments_count: 1 },
        total_credits: 1000, credits_used: used, credits_remaining: 1000 - used,
      }));
    });
  });
}

describe('control characters in member names the API sends', () => {
  it('run (text and JSON log), status and status --drift: none reaches stdout or stderr; the name shown blanked', async () => {
    const url = await hostileService();
    const ws = await newWorkspace();
    const posts = await ws.write('posts.csv', csv(['post_url'], postUrls(2).map((u) => [u])));
    const file = await ws.job('posts', { operation: 'post-details', input: { csv: posts, column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
    const env = { NETINGEST_API_URL: url, NETINGEST_API_TOKEN: TOKEN };
    const line = `post-details author.network_url: missing in 2/2, read from author.${SHOWN}`;

    const text = await inProcess(['run', file, '--db', ws.db], env);
    expect(text.code, text.stderr).toBe(EXIT.ok);
    expect(text.stdout).toContain(`  drift: ${line}`);
    expect(text.stderr).toContain(`WARN  answer drift: ${line}`);

    const json = await inProcess(['run', file, '--db', ws.db, '--refresh', '--log-format', 'json'], env);
    expect(json.code, json.stderr).toBe(EXIT.ok);
    const driftLog = json.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => String(l.msg).startsWith('answer drift'));
    expect(driftLog.msg).toBe(`answer drift: ${line}`);

    const status = await inProcess(['status', '--db', ws.db]);
    const drift = await inProcess(['status', '--db', ws.db, '--drift']);
    expect(drift.stdout).toContain(`  ${line}\n`);
    for (const out of [text, json, status, drift]) {
      expect(out.stdout).not.toMatch(CONTROL);
      expect(out.stderr).not.toMatch(CONTROL);
    }
  });
});
