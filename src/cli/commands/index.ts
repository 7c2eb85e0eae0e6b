import type { CommandSpec } from '../command.ts';

/**
 * Every subcommand as the top-level --help lists it, in that order. Its module (builder and implementation) is
 * imported only when yargs picks the command, so `netingest --help` and `--version` load no command's code.
 * `name` and `describe` are declared here only.
 */
export const commands: Array<{ name: string; describe: string; load: () => Promise<CommandSpec> }> = [
  { name: 'run [jobs..]', load: async () => (await import('./run.ts')).runCommand,
    describe: 'Run jobs: read their inputs, call the API for every due task, store the results' },
  { name: 'plan [jobs..]', load: async () => (await import('./plan.ts')).planCommand,
    describe: "Show what a run would do: valid and invalid rows, duplicates, fresh tasks, calls and credits (no paid API call; the balance from the service's free credit check when an API URL and token are set)" },
  { name: 'status', load: async () => (await import('./status.ts')).statusCommand,
    describe: 'Show recent runs, tasks by status per job, credits spent and the last known balance' },
  { name: 'report', load: async () => (await import('./report.ts')).reportCommand,
    describe: 'Write one self-contained HTML page of the last runs: status, credits, outcomes, pace, drift, what is due next' },
  { name: 'export [table]', load: async () => (await import('./export.ts')).exportCommand,
    describe: 'Export a table, a view or a read-only SELECT as CSV or JSON Lines (to --out, written atomically, or stdout)' },
  { name: 'enrich <job>', load: async () => (await import('./enrich.ts')).enrichCommand,
    describe: "Write the job's input CSV enriched with its results: one row per input row (or per result), or why none" },
  { name: 'query <sql>', load: async () => (await import('./query.ts')).queryCommand,
    describe: 'Run one read-only SQL statement: an aligned table on a terminal, CSV when piped' },
  { name: 'changes', load: async () => (await import('./changes.ts')).changesCommand,
    describe: 'List what changed: companies, posts and jobs added or changed, lookalikes and search results added or removed' },
  { name: 'reprocess', load: async () => (await import('./reprocess.ts')).reprocessCommand,
    describe: 'Rebuild companies, posts and jobs from the stored raw responses (no API calls, no credits)' },
  { name: 'prune', load: async () => (await import('./prune.ts')).pruneCommand,
    describe: 'Drop stored raw bodies that a newer answer superseded more than --keep-days ago, and reclaim the space' },
  { name: 'copy', load: async () => (await import('./copy.ts')).copyCommand,
    describe: 'Copy a SQLite dataset (data, ledger, runs, raw archive) into an empty PostgreSQL database, all or nothing' },
  { name: 'sandbox', load: async () => (await import('./sandbox.ts')).sandboxCommand,
    describe: 'Run a local emulator of the API (synthetic data, credits, rate limit, fault injection)' },
  { name: 'demo', load: async () => (await import('./demo.ts')).demoCommand,
    describe: 'Start the bundled sandbox API, run the example jobs in jobs/ against it, and query the result' },
  { name: 'init [operation]', load: async () => (await import('./init.ts')).initCommand,
    describe: 'Write a starter job (jobs/) and its input CSV (data/) into the current folder; never overwrites a file' },
];
