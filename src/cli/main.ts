import yargs from 'yargs';
import { readFileSync } from 'node:fs';
import type { CommandIO, CommandSpec } from './command.ts';
import { EXIT, exitCodeFor } from './exit-codes.ts';
import { NetingestError } from '../errors.ts';
import { commands } from './commands/index.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** Runs the netingest command line and resolves to the process exit code; never calls process.exit. */
export async function main(argv: string[], io: CommandIO = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  let exitCode: number = EXIT.ok;
  let parser = yargs(argv)
    .scriptName('netingest')
    .usage('$0 <command> [options]')
    .version(pkg.version)
    .strict()
    .demandCommand(1, 'Name a command; see --help.')
    .recommendCommands()
    .wrap(Math.min(110, process.stdout.columns ?? 110))
    .fail((msg, err) => {
      if (err) throw err;
      throw new UsageFailure(msg);
    });
  for (const spec of commands as CommandSpec[]) {
    parser = parser.command(spec.name, spec.describe, spec.builder, async (args) => {
      exitCode = await spec.run(args, io);
    });
  }
  try {
    await parser.parseAsync();
    return exitCode;
  } catch (err) {
    if (err instanceof UsageFailure) {
      io.stderr.write(`netingest: ${err.message}\nRun 'netingest --help' for usage.\n`);
      return EXIT.usage;
    }
    io.stderr.write(`netingest: ${describeError(err)}\n`);
    return exitCodeFor(err);
  }
}

class UsageFailure extends Error {}

/** One line for the user: our own errors by code and message, anything else without a stack trace. */
function describeError(err: unknown): string {
  if (err instanceof NetingestError) return `${err.message} [${err.code}]`;
  if (err instanceof Error) return `unexpected error: ${err.message}`;
  return `unexpected error: ${String(err)}`;
}
