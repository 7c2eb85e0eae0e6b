import type { Argv } from 'yargs';

/** Where a command writes: injectable so tests can capture output without spawning a process. */
export interface CommandIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

/** One subcommand: yargs declares its flags; `run` returns the exit code (the CLI entry alone maps errors). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- yargs' Argv<A> is invariant in A; each command narrows it
export interface CommandSpec<A = any> {
  builder: (y: Argv) => Argv<A>;
  run: (argv: A, io: CommandIO) => Promise<number>;
}

/** Identity helper that keeps a command's argument type. */
export function defineCommand<A>(spec: CommandSpec<A>): CommandSpec<A> {
  return spec;
}
