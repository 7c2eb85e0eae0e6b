/**
 * The starter job and input CSV `netingest init` writes for each operation: the smallest job that runs, at the
 * polite default rate, with a few input rows to replace by your own.
 */
import { OPERATIONS, type Operation } from '../spec/types.ts';
import { specOf } from '../operations/index.ts';
import type { Starter } from '../operations/operation-spec.ts';

export type { Starter } from '../operations/operation-spec.ts';

/** Each operation's starter (its spec's). */
export const STARTERS: Record<Operation, Starter> = Object.fromEntries(OPERATIONS.map((o) => [o, specOf(o).starter])) as Record<Operation, Starter>;

/** The job file's text: JSON, or a TypeScript module typed by defineJob (the package must be installed). */
export function starterJobText(starter: Starter, format: 'json' | 'ts'): string {
  const json = JSON.stringify(starter.definition, null, 2);
  if (format === 'json') return json + '\n';
  // Keys as a person writes them in TypeScript: bare where they are identifiers.
  const object = json.replace(/^(\s*)"([A-Za-z_$][\w$]*)":/gm, '$1$2:');
  return `import { defineJob } from 'netingest';\n\nexport default defineJob(${object});\n`;
}
