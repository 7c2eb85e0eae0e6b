import type { CommandSpec } from '../command.ts';

/** Every subcommand, in the order `--help` lists them. */
export const commands: CommandSpec[] = [];
