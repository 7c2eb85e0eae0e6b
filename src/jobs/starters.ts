/**
 * The starter job and input CSV `netingest init` writes for each operation: the smallest job that runs, at the
 * polite default rate, with a few input rows to replace by your own.
 */
import type { Operation } from '../spec/types.ts';
import type { JobDefinition } from './schema.ts';

/** One starter: a job file and the CSV it reads, as paths relative to the folder `init` runs in. */
export interface Starter {
  /** Job file without extension, under jobs/; also the job's name. */
  name: string;
  definition: JobDefinition;
  csvPath: string;
  csv: string;
}

export const STARTERS: Record<Operation, Starter> = {
  'similar-companies': {
    name: 'lookalikes',
    definition: {
      operation: 'similar-companies',
      input: { csv: 'data/leads.csv', column: 'company_url' },
      request: { account: { location: ['germany'] }, num: 10 },
      pages: 1,
      credits: { reserve: 100 },
    },
    csvPath: 'data/leads.csv',
    csv: 'company_url,account_owner\nhttps://www.network.com/company/acme-robotics,jane\nnetwork.com/company/initech,omar\n',
  },
  'post-details': {
    name: 'post-engagement',
    definition: {
      operation: 'post-details',
      input: { csv: 'data/posts.csv', column: 'post_url' },
      credits: { reserve: 100 },
    },
    csvPath: 'data/posts.csv',
    csv:
      'post_url,campaign\n' +
      'https://www.network.com/posts/jane-doe_robotics-automation-activity-7123456789012345678-abcd,launch\n' +
      'https://network.com/posts/omar-haddad_logistics-ai-activity-7123456789012345679-efgh,launch\n',
  },
  'search-jobs': {
    name: 'job-search',
    definition: {
      operation: 'search-jobs',
      input: { csv: 'data/job-queries.csv' },
      request: { timePosted: 'past_week', location: 'germany' },
      credits: { reserve: 100 },
    },
    csvPath: 'data/job-queries.csv',
    csv: 'keywords,location\nrobotics engineer,germany\ndata analyst,france\n',
  },
};

/** The job file's text: JSON, or a TypeScript module typed by defineJob (the package must be installed). */
export function starterJobText(starter: Starter, format: 'json' | 'ts'): string {
  const json = JSON.stringify(starter.definition, null, 2);
  if (format === 'json') return json + '\n';
  // Keys as a person writes them in TypeScript: bare where they are identifiers.
  const object = json.replace(/^(\s*)"([A-Za-z_$][\w$]*)":/gm, '$1$2:');
  return `import { defineJob } from 'netingest';\n\nexport default defineJob(${object});\n`;
}
