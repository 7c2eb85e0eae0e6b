/**
 * docs/api.md's `plan` example, run as written (only its paths made this test's): what it prints reads as a
 * sentence on a dataset where nothing has run yet, when no cost is known.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dirs: string[] = [];

afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** The first ```ts block under the heading that starts with `heading`. */
async function example(heading: string): Promise<string> {
  const doc = await readFile(join(ROOT, 'docs/api.md'), 'utf8');
  const section = doc.slice(doc.indexOf(`\n## ${heading}`));
  return /```ts\n([\s\S]*?)```/.exec(section)![1]!;
}

describe('docs/api.md', () => {
  it("plan's example prints its figures, not null, before any call has shown a cost", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'netingest-docs-api-'));
    dirs.push(dir);
    await mkdir(join(dir, 'jobs'));
    await mkdir(join(dir, 'data'));
    await copyFile(join(ROOT, 'data/leads.csv'), join(dir, 'data/leads.csv'));
    // The job of the docs' defineJob example, as JSON: the same fields.
    const job = { operation: 'similar-companies', input: { csv: join(dir, 'data/leads.csv'), column: 'company_url' }, request: { account: { location: ['germany'] }, num: 10 } };
    await writeFile(join(dir, 'jobs/lookalikes.json'), JSON.stringify(job));

    const code = (await example('plan'))
      .replace("from 'netingest'", `from ${JSON.stringify(pathToFileURL(join(ROOT, 'src/index.ts')).href)}`)
      .replace(/'jobs\/lookalikes\.[a-z]+'/, JSON.stringify(join(dir, 'jobs/lookalikes.json')))
      .replace("'data/netingest.db'", JSON.stringify(join(dir, 'netingest.db')));
    const script = join(dir, 'plan-example.ts');
    await writeFile(script, code);

    const printed: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void printed.push(args.join(' ')));
    try {
      await import(/* @vite-ignore */ pathToFileURL(script).href);
    } finally {
      log.mockRestore();
    }
    expect(printed).toHaveLength(1);
    expect(printed[0]).not.toMatch(/null|undefined|NaN/);
    expect(printed[0]).toMatch(/^\d+ calls, .*\d+ credits; \d+ invalid rows?$/);
  });
});
