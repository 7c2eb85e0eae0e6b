import type { CommandSpec } from '../command.ts';
import { runCommand } from './run.ts';
import { planCommand } from './plan.ts';
import { statusCommand } from './status.ts';
import { sandboxCommand } from './sandbox.ts';
import { demoCommand } from './demo.ts';
import { reprocessCommand } from './reprocess.ts';
import { pruneCommand } from './prune.ts';
import { exportCommand } from './export.ts';
import { enrichCommand } from './enrich.ts';
import { queryCommand } from './query.ts';

/** Every subcommand, in the order `--help` lists them. */
export const commands: CommandSpec[] = [
  runCommand,
  planCommand,
  statusCommand,
  exportCommand,
  enrichCommand,
  queryCommand,
  reprocessCommand,
  pruneCommand,
  sandboxCommand,
  demoCommand,
];
