/**
 * Outside the checkout: `netingest init` writes a starter job and CSV that `plan` accepts, and never replaces a
 * file; `netingest demo` runs the package's own jobs and data whatever the current folder, into the folder it
 * names.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import { OPERATIONS } from '../../src/spec/types.ts';
import { inProcess } from '../support/run-helpers.ts';

// The built CLI, as installed (test/global-setup.ts builds it).
const BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));
const dirs: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'netingest-init-'));
  dirs.push(dir);
  return dir;
}

/** `netingest <args>` in `cwd`, its exit code and output (a non-zero exit is an outcome, not a throw). */
async function cli(cwd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8' });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * The same in this process (src, not dist): for the checks that are about what init writes, not about the
 * installed CLI finding its files, which the first operation's init and plan and the demo keep spawned.
 */
const here = (cwd: string, args: string[]) => inProcess(args, {}, { cwd });

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('netingest init', () => {
  it('writes a starter job and CSV for each operation, which plan reads with no error', async () => {
    const dir = await tempDir();
    for (const [i, operation] of OPERATIONS.entries()) {
      const netingest = i === 0 ? cli : here;
      const init = await netingest(dir, ['init', operation]);
      expect(init.code, init.stderr).toBe(0);
      const jobFile = /Wrote (jobs\/\S+\.json) and (data\/\S+\.csv)/.exec(init.stdout);
      expect(jobFile, init.stdout).not.toBeNull();
      expect(JSON.parse(await readFile(join(dir, jobFile![1]!), 'utf8')).operation).toBe(operation);
      const plan = await netingest(dir, ['plan', jobFile![1]!, '--db', 'none.db']);
      expect(plan.code, plan.stderr).toBe(0);
      expect(plan.stdout).toMatch(new RegExp(`\\(${operation}\\)\\n  input: \\d+ tasks?, 0 invalid rows`));
    }
    expect(existsSync(join(dir, 'none.db'))).toBe(false);
  }, 60_000);

  it('refuses to replace an existing file and writes nothing then', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'data'));
    await writeFile(join(dir, 'data/leads.csv'), 'mine\n');
    const init = await here(dir, ['init']);
    expect(init.code).toBe(2);
    expect(init.stderr).toContain('data/leads.csv already exists: nothing written');
    expect(await readFile(join(dir, 'data/leads.csv'), 'utf8')).toBe('mine\n');
    expect(existsSync(join(dir, 'jobs/lookalikes.json'))).toBe(false);
  }, 30_000);

  it('refuses a jobs/ or data/ that is a file before writing anything, with no unexpected error', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'data'), 'a file\n');
    const init = await here(dir, ['init']);
    expect(init.code, init.stderr).toBe(2);
    expect(init.stderr).toContain('data is a file, not a folder: init writes jobs/lookalikes.json and data/leads.csv; nothing written');
    expect(existsSync(join(dir, 'jobs/lookalikes.json'))).toBe(false);
  }, 30_000);

  it('--ts writes a module typed by defineJob from the package', async () => {
    const dir = await tempDir();
    const init = await here(dir, ['init', 'post-details', '--ts']);
    expect(init.code, init.stderr).toBe(0);
    const text = await readFile(join(dir, 'jobs/post-engagement.ts'), 'utf8');
    expect(text).toMatch(/^import \{ defineJob \} from 'netingest';\n\nexport default defineJob\(\{\n {2}operation: "post-details",/);
  }, 30_000);
});

describe('netingest demo', () => {
  it('refuses a --dir that is a file (the database given for its folder) with a message, not an unexpected error', async () => {
    const cwd = await tempDir();
    await writeFile(join(cwd, 'demo.db'), '');
    const demo = await here(cwd, ['demo', '--dir', 'demo.db']);
    expect(demo.code, demo.stderr).toBe(2);
    expect(demo.stderr).toContain("--dir demo.db: cannot make the demo's folder: it (or a folder on its path) is a file; --dir names a folder, --db a database file");
  }, 30_000);

  it("runs the package's jobs from any folder into --dir, and says where", async () => {
    const cwd = await tempDir();
    const demo = await cli(cwd, ['demo', '--dir', 'out']);
    expect(demo.code, demo.stderr).toBe(0);
    const db = join(cwd, 'out/demo.db');
    expect(demo.stdout).toContain(`The demo's database is ${db}.`);
    expect(demo.stdout).toContain("Run 'npx --no-install netingest demo --dir out' again");
    const sqlite = new BetterSqlite3(db, { readonly: true });
    try {
      const jobs = sqlite.prepare('SELECT DISTINCT job FROM tasks ORDER BY job').pluck().all();
      expect(jobs).toEqual(['job-search', 'lookalikes', 'post-engagement']);
      // As `netingest run` records it, for status and the report.
      expect(sqlite.prepare('SELECT status, exit_code FROM runs').all()).toEqual([{ status: 'completed', exit_code: 0 }]);
    } finally {
      sqlite.close();
    }
  }, 60_000);
});
