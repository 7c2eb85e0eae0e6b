import { mkdir, writeFile } from 'node:fs/promises';
import { existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { defineCommand } from '../common-options.ts';
import { UsageError } from '../../errors.ts';
import { describeFsError } from '../../input/input-error.ts';
import { OPERATIONS, type Operation } from '../../spec/types.ts';
import { specOf } from '../../operations/index.ts';
import type { Starter } from '../../operations/operation-spec.ts';

/** `netingest init [operation]`: the operation's starter job and input CSV, never written over a file. */
export const initCommand = defineCommand({
  builder: (y) =>
    y
      .positional('operation', { choices: OPERATIONS, default: OPERATIONS[0] as Operation, describe: 'the operation the job runs' })
      .option('ts', { type: 'boolean', default: false, describe: "write the job as TypeScript (import { defineJob } from 'netingest')" })
      .example('$0 init', 'jobs/lookalikes.json and data/leads.csv: companies similar to each lead')
      .example('$0 init post-details --ts', 'jobs/post-engagement.ts and data/posts.csv'),
  run: async (argv, io) => {
    const starter = specOf(argv.operation).starter;
    const jobFile = `jobs/${starter.name}.${argv.ts ? 'ts' : 'json'}`;
    const files: Array<[string, string]> = [
      [jobFile, starterJobText(starter, argv.ts ? 'ts' : 'json')],
      [starter.definition.input.csv, starter.csv],
    ];
    const existing = files.map(([path]) => path).filter((path) => existsSync(path));
    if (existing.length > 0) {
      throw new UsageError(`${existing.join(' and ')} already exist${existing.length === 1 ? 's' : ''}: nothing written (init never overwrites a file)`);
    }
    assertFoldersUsable(files.map(([path]) => path));
    for (const [path, text] of files) {
      try {
        await mkdir(dirname(path), { recursive: true });
        // 'wx': should a file appear since the check above, it is still not replaced.
        await writeFile(path, text, { flag: 'wx' });
      } catch (err) {
        throw new UsageError(`cannot write ${path}: ${describeFsError(err)}`, 'OUTPUT_UNWRITABLE', { cause: err });
      }
    }
    io.stdout.write(
      `Wrote ${jobFile} and ${starter.definition.input.csv}. Put your own rows in the CSV, then:\n` +
        `  netingest plan ${jobFile}   # what a run would do and cost; no API call\n` +
        `  netingest run ${jobFile}    # with NETINGEST_API_URL and NETINGEST_API_TOKEN set\n` +
        (argv.ts ? `The job imports 'netingest': install the package in this folder from its checkout or tarball (npm install /path/to/netingest-0.1.0.tgz), not by bare name from the registry.\n` : ''),
    );
    return 0;
  },
});

/** Refuses before writing anything a folder (jobs/, data/) that is a file: the job would be written without its CSV. */
function assertFoldersUsable(paths: readonly string[]): void {
  for (const folder of new Set(paths.map((path) => dirname(path)))) {
    if (existsSync(folder) && !statSync(folder).isDirectory()) {
      throw new UsageError(`${folder} is a file, not a folder: init writes ${paths.join(' and ')}; nothing written`, 'OUTPUT_UNWRITABLE');
    }
  }
}

/** The job file's text: JSON, or a TypeScript module typed by defineJob (the package must be installed). */
function starterJobText(starter: Starter, format: 'json' | 'ts'): string {
  const json = JSON.stringify(starter.definition, null, 2);
  if (format === 'json') return json + '\n';
  // Keys as a person writes them in TypeScript: bare where they are identifiers.
  const object = json.replace(/^(\s*)"([A-Za-z_$][\w$]*)":/gm, '$1$2:');
  return `import { defineJob } from 'netingest';\n\nexport default defineJob(${object});\n`;
}
