import yargs from 'yargs';
import type { CommandIO, CommandSpec } from './common-options.ts';
import { givenTwice } from './given-twice.ts';
import { describeError, EXIT, exitCodeFor } from './exit-codes.ts';
import { NetingestError } from '../errors.ts';
import { commands } from './commands/index.ts';
import { readPackageJson } from '../package-root.ts';
import { nearestName } from '../near-name.ts';
import { terminalSafe, terminalSafeJson } from '../text-width.ts';
import { schemaUpgradeLine, withSchemaUpgradeNotice } from '../schema-upgrade-notice.ts';

const pkg = readPackageJson();

/** Runs the netingest command line and resolves to the process exit code; never calls process.exit. */
export async function main(argv: string[], io: CommandIO = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  let exitCode: number = EXIT.ok;
  // An argument starting with `-- ` (SQL opening with a line comment) names no option, yet yargs drops it as one: a
  // leading space keeps it a value (`--` alone is left as it is).
  let parser = yargs(argv.map((arg) => (/^--\s/.test(arg) ? ` ${arg}` : arg)))
    .scriptName('netingest')
    .usage('$0 <command> [options]')
    .version(pkg.version)
    // `-h` is what most tools take for help; no command uses it for anything else.
    .help()
    .alias('help', 'h')
    .strict()
    .demandCommand(1, 'Name a command; see --help.')
    .recommendCommands()
    .wrap(Math.min(110, process.stdout.columns ?? 110))
    .fail((msg, err) => {
      if (err) throw err;
      throw new UsageFailure(unknownArgumentsMessage(msg, Object.keys(optionsOf(parser).key ?? {})) ?? msg);
    });
  for (const entry of commands) {
    // yargs calls only the picked command's builder: the command's module is imported on first use.
    let loaded: Promise<CommandSpec> | undefined;
    const spec = () => (loaded ??= entry.load());
    parser = parser.command(entry.name, entry.describe, async (y) => (await spec()).builder(y), async (args) => {
      exitCode = await (await spec()).run(args, io);
    });
  }
  parser = parser.middleware((args) => refuseRepeated(args, optionsOf(parser)), true);
  skipHelpCache(parser);
  const jsonLog = argv.some((a, i) => a === '--log-format=json' || (a === '--log-format' && argv[i + 1] === 'json'));
  try {
    await withSchemaUpgradeNotice(upgradeNotice(io, jsonLog), () => parser.parseAsync());
    return exitCode;
  } catch (err) {
    // yargs' own errors (YError) are usage errors: a flag's coerce refusing its value reaches here as one.
    if (err instanceof UsageFailure || (err instanceof Error && err.name === 'YError')) {
      io.stderr.write(`netingest: ${err.message}\nRun 'netingest --help' for usage.\n`);
      return EXIT.usage;
    }
    const code = exitCodeFor(err);
    // Asked for JSON log lines: even a command that fails at once writes one.
    if (jsonLog) {
      const errCode = err instanceof NetingestError ? err.code : 'INTERNAL';
      io.stderr.write(jsonLogLine('error', describeError(err), { code: errCode, exit_code: code }));
    } else {
      // The message may quote the API or the database: its controls are blanked.
      io.stderr.write(`netingest: ${terminalSafe(describeError(err))}\n`);
    }
    return code;
  }
}

class UsageFailure extends Error {}

/** A one-value flag given twice reaches a command as an array, which it would misread (`--db a --db b`: a TypeError). */
function refuseRepeated(args: Record<string, unknown>, options: { key?: object; array?: string[] }): void {
  const arrays = new Set(options.array ?? []);
  for (const name of Object.keys(options.key ?? {})) {
    const value = args[name];
    if (!arrays.has(name) && Array.isArray(value)) throw givenTwice(`--${name}`, value);
  }
}

/** The flags the command being parsed declares (yargs keeps them on its instance while it parses that command). */
function optionsOf(parser: unknown): { key?: object; array?: string[] } {
  return (parser as { getOptions?: () => { key?: object; array?: string[] } }).getOptions?.() ?? {};
}

/**
 * yargs' "Unknown arguments: dry-run, dryRun" names each flag twice (its camelCase expansion too): once here, with the
 * flag most likely meant (`--concurency`: did you mean --concurrency?). Null for any other message.
 */
function unknownArgumentsMessage(msg: string, known: readonly string[]): string | null {
  const listed = /^Unknown arguments?: (.*)$/.exec(msg)?.[1]?.split(', ');
  if (!listed) return null;
  const camel = (name: string) => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  const names = listed.filter((name) => !listed.some((other) => other !== name && other.includes('-') && camel(other) === name));
  const flags = known.filter((k) => k.length > 1 && !/[A-Z]/.test(k));
  const shown = names.map((name) => {
    const near = name.length > 1 ? nearestName(name, flags) : undefined;
    return near ? `${name} (did you mean --${near}?)` : name;
  });
  return `Unknown argument${shown.length > 1 ? 's' : ''}: ${shown.join(', ')}`;
}

/** One stderr line per dataset a command's opening upgraded (a JSON log line under --log-format json). */
function upgradeNotice(io: CommandIO, jsonLog: boolean): (dataset: string) => void {
  const told = new Set<string>();
  return (dataset) => {
    if (told.has(dataset)) return;
    told.add(dataset);
    const msg = schemaUpgradeLine(dataset);
    io.stderr.write(jsonLog ? jsonLogLine('warn', msg, { db: dataset }) : `netingest: ${terminalSafe(msg)}\n`);
  };
}

/** A line as `--log-format json` writes them, for what the CLI entry says itself. */
function jsonLogLine(level: 'warn' | 'error', msg: string, fields: Record<string, string | number>): string {
  return terminalSafeJson(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })) + '\n';
}

/** yargs renders the picked command's help up front, for a showHelp() that never comes (.fail throws). */
function skipHelpCache(parser: unknown): void {
  type Internals = { getInternalMethods?: () => { getUsageInstance(): { cacheHelpMessage?: () => void } } };
  const usage = (parser as Internals).getInternalMethods?.().getUsageInstance();
  if (usage?.cacheHelpMessage) usage.cacheHelpMessage = () => undefined;
}
