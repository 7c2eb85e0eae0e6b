/**
 * A small workspace for the operations tests (test/ops-*.test.ts): a temp folder with a posts CSV, a
 * similar-companies CSV and their job files, and the environment that points the CLI at a sandbox.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { companyUrl, postUrl, writeJobFile, writeUrlCsv } from './inputs.ts';

export interface OpsWorkspace {
  dir: string;
  /** posts.json: post-details over `posts` inputs (every 7th a notfound). */
  postsJob: string;
  /** lookalikes.json: similar-companies, two pages, over `companies` inputs. */
  lookalikesJob: string;
  cleanup(): void;
}

export interface OpsWorkspaceOptions {
  posts?: number;
  companies?: number;
  requestsPerMinute?: number;
  concurrency?: number;
  retries?: number;
}

/** Creates the workspace; job files are relative to `dir`, which the CLI should use as its cwd. */
export async function opsWorkspace(options: OpsWorkspaceOptions = {}): Promise<OpsWorkspace> {
  const dir = mkdtempSync(join(tmpdir(), 'netingest-ops-'));
  await writeUrlCsv(join(dir, 'posts.csv'), 'post_url', options.posts ?? 12, (i) => postUrl('ops', i), 7);
  await writeUrlCsv(join(dir, 'companies.csv'), 'company_url', options.companies ?? 3, (i) => companyUrl('ops', i));
  const common = {
    rate: { requestsPerMinute: options.requestsPerMinute ?? 60_000, concurrency: options.concurrency ?? 4 },
    retry: { retries: options.retries ?? 2, minTimeoutMs: 10, maxTimeoutMs: 50 },
  };
  writeJobFile(dir, { name: 'posts', operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, ...common });
  writeJobFile(dir, {
    name: 'lookalikes',
    operation: 'similar-companies',
    input: { csv: 'companies.csv', column: 'company_url' },
    pages: 2,
    ...common,
  });
  return { dir, postsJob: 'posts.json', lookalikesJob: 'lookalikes.json', cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The environment variables that send the CLI to `url` with `token`. */
export function apiEnv(url: string, token: string): Record<string, string> {
  return { NETINGEST_API_URL: url, NETINGEST_API_TOKEN: token };
}

/** A Node stack trace line ("    at fn (file:line:col)"), which users must never see. */
export const STACK_LINE = /^\s+at .+(:\d+:\d+\)?|\(native\))$/m;

/** The bytes of a file, or an empty buffer when it does not exist. */
export function bytesOf(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch {
    return Buffer.alloc(0);
  }
}
