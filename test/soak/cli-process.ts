/**
 * `netingest` as a child process, the way cron runs it: no terminal, output captured, killable at any moment.
 */
import { spawn } from 'node:child_process';
import { BIN, ROOT } from './sandbox-process.ts';

export interface CliResult {
  /** Exit code, or null when killed by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  /** The netingest executable to run. @default BIN */
  bin?: string;
  /** Added to the environment (NETINGEST_* variables of the parent are never passed on). */
  env?: Record<string, string>;
  /** Killed with SIGKILL after this long (a hung command fails the caller instead of hanging it). */
  timeoutMs?: number;
  /** Run as this user and group (tests run as root, where file permissions do not stop writes). */
  uid?: number;
  gid?: number;
  /**
   * Largest file the process may write, in KiB (RLIMIT_FSIZE via the shell's `ulimit -f`, with SIGXFSZ
   * ignored so a write past it fails with EFBIG): a disk that fills up, without a disk to fill.
   */
  fileSizeLimitKb?: number;
}

export interface CliProcess {
  pid: number;
  result: Promise<CliResult>;
  kill(signal: NodeJS.Signals): void;
  /** Output so far. */
  stdout(): string;
  stderr(): string;
}

/** Starts `node <BIN> <args>` (sandbox-process.ts: the build under vitest, the sources otherwise). */
export function startCli(args: string[], options: CliOptions = {}): CliProcess {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('NETINGEST_')) env[k] = v;
  Object.assign(env, options.env);
  const [command, argv] =
    options.fileSizeLimitKb === undefined
      ? [process.execPath, [options.bin ?? BIN, ...args]]
      : ['/bin/bash', ['-c', `trap '' XFSZ; ulimit -f ${Math.floor(options.fileSizeLimitKb)} && exec "$0" "$@"`, process.execPath, options.bin ?? BIN, ...args]];
  const child = spawn(command, argv, {
    cwd: options.cwd ?? ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    uid: options.uid,
    gid: options.gid,
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
  const result = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return {
    pid: child.pid!,
    result,
    kill: (signal) => {
      child.kill(signal);
    },
    stdout: () => stdout,
    stderr: () => stderr,
  };
}

/** Runs `netingest <args>` to the end. */
export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  return startCli(args, options).result;
}
