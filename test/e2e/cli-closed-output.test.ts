/**
 * The CLI's stdout or stderr losing its reader (`netingest run | head`, a `| tee` killed by the same Ctrl-C):
 * the command carries on and ends with its own exit code, never with an EPIPE stack trace mid-run.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN, FAST_RATE, FAST_RETRY, csv, postUrls, query, taskStatuses, useWorkspaces, waitFor, type Workspace, operationRequests } from '../support/run-helpers.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

const TOKEN = 'closed-output-token-5d1e9a';
const newWorkspace = useWorkspaces();
const newSandbox = useSandboxes();

async function postsJob(ws: Workspace, n: number): Promise<string> {
  await ws.write('posts.csv', csv(['post_url'], postUrls(n).map((u) => [u])));
  return ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
}

/** `netingest run` with one of its output pipes closed by the reader before the command writes anything. */
async function runWithClosed(closed: 'stdout' | 'stderr', ws: Workspace, url: string, file: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, NETINGEST_API_URL: url, NETINGEST_API_TOKEN: TOKEN };
  const child = spawn(process.execPath, [BIN, 'run', file, '--db', ws.db], { cwd: ws.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let kept = '';
  const open = closed === 'stdout' ? child.stderr! : child.stdout!;
  open.setEncoding('utf8').on('data', (d: string) => (kept += d));
  child[closed]!.destroy();
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  return { code, kept };
}

describe('an output whose reader went away', () => {
  it.each(['stdout', 'stderr'] as const)('closed %s: the run still finishes, writes every answer and exits 0', async (closed) => {
    const ws = await newWorkspace();
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 10_000 } });
    const file = await postsJob(ws, 20);
    const { code, kept } = await runWithClosed(closed, ws, sandbox.url, file);
    expect(kept).not.toMatch(/EPIPE|\n\s+at /);
    expect(code, kept).toBe(0);
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 20 });
    expect(query(ws, 'SELECT status FROM runs')).toEqual([{ status: 'completed' }]);
  });

  it('closed stdout and stderr, then SIGINT (Ctrl-C on `run | tee`): exit 130, the run closed as interrupted', async () => {
    const ws = await newWorkspace();
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 10_000 }, latencyMs: 200 });
    const file = await postsJob(ws, 40);
    const env: NodeJS.ProcessEnv = { ...process.env, NETINGEST_API_URL: sandbox.url, NETINGEST_API_TOKEN: TOKEN };
    const child = spawn(process.execPath, [BIN, 'run', file, '--db', ws.db], { cwd: ws.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.destroy();
    child.stderr!.destroy();
    const done = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    await waitFor(() => operationRequests(sandbox).length > 0, 20_000, 'the first call');
    child.kill('SIGINT');
    expect(await done).toBe(130);
    expect(query(ws, 'SELECT status FROM runs')).toEqual([{ status: 'interrupted' }]);
    const statuses = taskStatuses(ws, 'posts');
    expect(statuses['pending'] ?? 0).toBe(0);
    expect((statuses['done'] ?? 0) + (statuses['deferred'] ?? 0)).toBe(40);
  });
});
