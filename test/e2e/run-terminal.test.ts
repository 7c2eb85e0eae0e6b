/**
 * `netingest run` on a real terminal: the CLI runs in a pseudo-terminal (util-linux `script`) of a given width,
 * and its output is played on a small screen model, so the test sees what the operator sees: the live progress
 * line, what it leaves behind, and Ctrl-C typed at the keyboard.
 */
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BALANCE_PATH } from '../../src/spec/types.ts';
import { useFakeServices, useSandboxes } from '../support/sandbox-helpers.ts';
import { BIN, FAST_RETRY, companyUrls, count, csv, taskStatuses, useWorkspaces, waitFor, type Workspace, operationRequests } from '../support/run-helpers.ts';

const TOKEN = 'terminal-token-5d1e77';
const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout?.includes('util-linux') ?? false;

const sandboxes = useSandboxes();
const startFake = useFakeServices();
const workspaces = useWorkspaces();

/** The rows a terminal `columns` wide shows after `output`: wraps long lines, honours \r, \n and ESC[K. */
function screen(output: string, columns: number): string[] {
  const rows: string[][] = [[]];
  let row = 0;
  let col = 0;
  for (let i = 0; i < output.length; i++) {
    const ch = output[i]!;
    if (ch === '\r') col = 0;
    else if (ch === '\n') {
      row += 1;
      col = 0;
      rows[row] ??= [];
    } else if (output.startsWith('\x1b[K', i)) {
      rows[row]!.length = Math.min(rows[row]!.length, col);
      i += 2;
    } else {
      if (col >= columns) {
        row += 1;
        col = 0;
        rows[row] ??= [];
      }
      rows[row]![col] = ch;
      col += 1;
    }
  }
  return rows.map((r) => Array.from(r, (c) => c ?? ' ').join('').trimEnd());
}

/** `netingest <args>` against the API at `apiUrl`, in a terminal `columns` wide; `keys` are typed after `keysWhen` holds. */
async function inTerminal(
  ws: Workspace,
  apiUrl: string,
  args: string[],
  options: { columns: number; keys?: string[]; keysWhen?: () => boolean },
): Promise<{ code: number | null; output: string }> {
  const command = `stty cols ${options.columns} rows 40; exec '${process.execPath}' '${BIN}' ${args.map((a) => `'${a}'`).join(' ')}`;
  const child = spawn('script', ['-q', '-f', '-e', '-c', command, '/dev/null'], {
    cwd: ws.dir,
    env: { ...process.env, NETINGEST_API_URL: apiUrl, NETINGEST_API_TOKEN: TOKEN },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
  const done = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  for (const key of options.keys ?? []) {
    await waitFor(() => options.keysWhen?.() ?? true, 20_000, 'the moment to type');
    child.stdin.write(key);
    await new Promise((r) => setTimeout(r, 300));
  }
  const code = await done;
  child.stdin.destroy();
  return { code, output };
}

async function companiesJob(ws: Workspace, n: number): Promise<string> {
  await ws.write('leads.csv', csv(['company_url'], companyUrls(n).map((u) => [u])));
  return ws.job('lookalikes-of-the-leads', {
    operation: 'similar-companies',
    input: { csv: 'leads.csv', column: 'company_url' },
    rate: { requestsPerMinute: 600_000, concurrency: 2 },
    retry: FAST_RETRY,
  });
}

describe.skipIf(!hasScript)('the live progress line on a terminal', () => {
  it('fits a 60-column terminal: no row is left behind by the redraws, and the summary follows cleanly', async () => {
    const sandbox = await sandboxes({ tokens: { [TOKEN]: 10_000 }, latencyMs: [40, 60] });
    const ws = await workspaces();
    const file = await companiesJob(ws, 60);
    const { code, output } = await inTerminal(ws, sandbox.url, ['run', file, '--db', ws.db], { columns: 60 });
    expect(code, output).toBe(0);
    // The line was drawn several times, each narrower than the terminal, with the figures an operator needs
    // (the last clear is the one before the summary).
    const drawn = output.split('\r\x1b[K').slice(1, -1).map((d) => d.split('\r')[0]!);
    expect(drawn.length, output).toBeGreaterThan(2);
    for (const line of drawn) {
      expect(line.length, line).toBeLessThan(60);
      expect(line).toMatch(/^lookalikes-of-\S*: \d+\/60 \d+\.\d\/s cr (\?|\d+) ETA \S+ fail 0 err \d+$/);
    }
    const rows = screen(output, 60).filter((r) => r !== '');
    expect(rows[0], rows.join('\n')).toBe('Run 1: completed');
    expect(rows.join('\n')).not.toMatch(/\d+\/60/);
  });

  it('Ctrl-C: the notice on a line of its own, exit 130, the database consistent; a second Ctrl-C exits at once', async () => {
    const sandbox = await sandboxes({ tokens: { [TOKEN]: 10_000 }, latencyMs: [40, 60] });
    const ws = await workspaces();
    const file = await companiesJob(ws, 200);
    const once = await inTerminal(ws, sandbox.url, ['run', file, '--db', ws.db], {
      columns: 120, keys: ['\x03'], keysWhen: () => operationRequests(sandbox).length >= 10,
    });
    expect(once.code, once.output).toBe(130);
    const rows = screen(once.output, 120).filter((r) => r !== '');
    const notice = rows.findIndex((r) => r.includes('signal received'));
    expect(rows[notice], rows.join('\n')).toMatch(/^\d{4}-\d\d-\d\dT\S+ WARN  signal received: finishing calls in flight/);
    expect(rows.slice(notice + 1).join('\n')).toMatch(/^\S+ WARN  job stopped before its end /m);
    expect(rows.join('\n')).toMatch(/^Run 1: interrupted/m);
    const done = count(ws, `SELECT count(*) FROM tasks WHERE status = 'done'`);
    expect(taskStatuses(ws, 'lookalikes-of-the-leads')).toEqual({ done, deferred: 200 - done });
    expect(count(ws, 'SELECT count(*) FROM raw_responses')).toBe(done);

    // Calls never answered: the first Ctrl-C waits for them (their 30 s request timeout), the second one does not.
    // The service offers no free balance check (404 at once), so the calls go out without waiting 5 s for it.
    let slowCalls = 0;
    const slow = await startFake((req, res) => {
      req.resume();
      if (req.url?.startsWith(BALANCE_PATH)) return void res.writeHead(404).end('{}');
      slowCalls += 1;
    });
    const started = Date.now();
    const twice = await inTerminal(ws, slow, ['run', file, '--db', ws.db], {
      columns: 120, keys: ['\x03', '\x03'], keysWhen: () => slowCalls >= 1,
    });
    expect(twice.code, twice.output).toBe(130);
    // Waiting for the calls in flight would take their 30 s timeout.
    expect(Date.now() - started).toBeLessThan(18_000);
    // Said on a line of its own, so that the exit is not taken for a crash.
    const again = screen(twice.output, 120).find((r) => r.includes('signal received again'));
    expect(again, twice.output).toMatch(/^\S+ WARN  signal received again: stopping at once; the calls in flight are not written/);
  });
});
