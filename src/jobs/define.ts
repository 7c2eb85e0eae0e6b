// Imported by users' job files: keep this module free of runtime dependencies (the import below is erased).
import type { JobDefinition } from './schema.ts';

export type { JobDefinition };

/** Types a job definition in a `.ts` job file (typos in field names are compile errors); returns it unchanged. */
export function defineJob(def: JobDefinition): JobDefinition {
  return def;
}
