import type { CommandSpec } from '../command.ts';

/**
 * A subcommand as the top-level --help lists it. Its module (builder and implementation) is imported only when
 * yargs picks the command, so `netingest --help` and `--version` load no command's code. `name` and `describe`
 * are declared here only.
 */
export interface LazyCommand {
  name: string;
  describe: string;
  load: () => Promise<CommandSpec>;
}

/** Every subcommand, in the order `--help` lists them. */
export const commands: LazyCommand[] = [
  {
    name: 'run [jobs..]',
    describe: 'Run jobs: read their inputs, call the API for every due task, store the results',
    load: async () => (await import('./run.ts')).runCommand,
  },
  {
    name: 'plan [jobs..]',
    describe:
      'Show what a run would do: valid and invalid rows, duplicates, fresh tasks, calls and credits (no paid API call; ' +
      "the balance from the service's free credit check when an API URL and token are set)",
    load: async () => (await import('./plan.ts')).planCommand,
  },
  {
    name: 'status',
    describe: 'Show recent runs, tasks by status per job, credits spent and the last known balance',
    load: async () => (await import('./status.ts')).statusCommand,
  },
  {
    name: 'report',
    describe: 'Write one self-contained HTML page of the last runs: status, credits, outcomes, pace, drift, what is due next',
    load: async () => (await import('./report.ts')).reportCommand,
  },
  {
    name: 'export [table]',
    describe: 'Export a table, a view or a read-only SELECT as CSV or JSON Lines (to --out, written atomically, or stdout)',
    load: async () => (await import('./export.ts')).exportCommand,
  },
  {
    name: 'enrich <job>',
    describe: "Write the job's input CSV enriched with its results: one row per input row (or per result), or why none",
    load: async () => (await import('./enrich.ts')).enrichCommand,
  },
  {
    name: 'query <sql>',
    describe: 'Run one read-only SQL statement: an aligned table on a terminal, CSV when piped',
    load: async () => (await import('./query.ts')).queryCommand,
  },
  {
    name: 'changes',
    describe: 'List what changed: companies, posts and jobs added or changed, lookalikes and search results added or removed',
    load: async () => (await import('./changes.ts')).changesCommand,
  },
  {
    name: 'reprocess',
    describe: 'Rebuild companies, posts and jobs from the stored raw responses (no API calls, no credits)',
    load: async () => (await import('./reprocess.ts')).reprocessCommand,
  },
  {
    name: 'prune',
    describe: 'Drop stored raw bodies that a newer answer superseded more than --keep-days ago, and reclaim the space',
    load: async () => (await import('./prune.ts')).pruneCommand,
  },
  {
    name: 'copy',
    describe: 'Copy a SQLite dataset (data, ledger, runs, raw archive) into an empty PostgreSQL database, all or nothing',
    load: async () => (await import('./copy.ts')).copyCommand,
  },
  {
    name: 'sandbox',
    describe: 'Run a local emulator of the API (synthetic data, credits, rate limit, fault injection)',
    load: async () => (await import('./sandbox.ts')).sandboxCommand,
  },
  {
    name: 'demo',
    describe: 'Start the bundled sandbox API, run the example jobs in jobs/ against it, and query the result',
    load: async () => (await import('./demo.ts')).demoCommand,
  },
  {
    name: 'init [operation]',
    describe: 'Write a starter job (jobs/) and its input CSV (data/) into the current folder; never overwrites a file',
    load: async () => (await import('./init.ts')).initCommand,
  },
];
