/**
 * The sandbox in its own process (`netingest sandbox --port 0 ...`), for the soak test and the benchmarks: it
 * survives SIGKILLs of the runner, gets its own core, and its request lines are the server's record of every
 * call (arrival time, status, fault, credits charged).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Repository root. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/**
 * The netingest executable, run with the current node: under vitest the build the global setup keeps fresh
 * (dist/bin.js starts on a third of the CPU tsx takes to compile the sources in every spawned process); from
 * `npm run soak`, which builds nothing, the sources.
 */
export const BIN = process.env['VITEST']
  ? fileURLToPath(new URL('../../dist/bin.js', import.meta.url))
  : fileURLToPath(new URL('../../src/cli/bin.mjs', import.meta.url));

/** One request line of `netingest sandbox`, parsed. */
export interface SandboxRequestLine {
  /** Arrival time, ms since the epoch (millisecond resolution). */
  atMs: number;
  method: string;
  target: string;
  /** 0 for a dropped connection. */
  status: number;
  fault: string | null;
  /** Credits charged for this request (0 when not charged). */
  charged: number;
}

export interface SandboxProcess {
  url: string;
  pid: number;
  /** Request lines received so far (none with `--quiet`). */
  requests(): SandboxRequestLine[];
  /** SIGTERM, then waits for the process to exit; every request line is read by then. */
  stop(): Promise<void>;
}

const LINE = /^(\S+) (\S+) (\S+) -> (\d+|dropped)(?: \[(\w+)\])?(?: charged ([\d.]+))?$/;

/** Parses one request line of `netingest sandbox`; null for any other line. */
export function parseRequestLine(line: string): SandboxRequestLine | null {
  const m = LINE.exec(line);
  if (!m) return null;
  return {
    atMs: Date.parse(m[1]!),
    method: m[2]!,
    target: m[3]!,
    status: m[4] === 'dropped' ? 0 : Number(m[4]),
    fault: m[5] ?? null,
    charged: m[6] === undefined ? 0 : Number(m[6]),
  };
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts `netingest sandbox --port 0` with extra flags and resolves once it listens. */
export async function startSandboxProcess(flags: string[], startTimeoutMs = 20_000): Promise<SandboxProcess> {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', ...flags], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const requests: SandboxRequestLine[] = [];
  let stderr = '';
  let partial = '';
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      running.delete(child);
      resolve();
    }),
  );
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sandbox did not start within ${startTimeoutMs} ms: ${stderr}`)), startTimeoutMs);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const listening = /listening on (http:\/\/\S+)/.exec(line);
        if (listening) {
          clearTimeout(timer);
          resolve(listening[1]!);
          continue;
        }
        const parsed = parseRequestLine(line);
        if (parsed) requests.push(parsed);
      }
    });
    void exit.then(() => {
      clearTimeout(timer);
      reject(new Error(`sandbox exited before listening (code ${child.exitCode}): ${stderr}`));
    });
  });
  return {
    url,
    pid: child.pid!,
    requests: () => requests,
    stop: async () => {
      if (!exited) child.kill('SIGTERM');
      await exit;
    },
  };
}
