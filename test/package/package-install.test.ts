/**
 * The package as a user gets it: `npm pack` of a copy of the checkout, installed into a scratch project, where a
 * job imports `defineJob` from 'netingest', the project's own tsc checks it, and the installed `netingest` plans
 * it, runs its demo (worker threads from dist/) and a script drives the programmatic API; and a strict project
 * without skipLibCheck checks the package's types. Slow (~30 s): its own file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** What `npm pack` needs of the checkout: the sources it builds from and the files it ships. */
const PACKED_FROM = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'LICENSE', 'docs', 'scripts', 'src', 'jobs', 'migrations'];

let work: string;
let project: string;
let tarball: string;
/** The copy's package.json before packing, and after. */
let checkoutManifest: string;
let restoredManifest: string;

async function sh(cmd: string, args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 32 * 2 ** 20, env: { ...process.env, npm_config_update_notifier: 'false' } });
}

/** The version of a package installed in the checkout, so that the scratch install finds it in npm's cache. */
async function installedVersion(name: string): Promise<string> {
  return (JSON.parse(await readFile(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'netingest-package-'));
  // Packed from a copy, so that nothing of the packing touches the checkout under other tests.
  const copy = join(work, 'checkout');
  for (const entry of PACKED_FROM) await cp(join(ROOT, entry), join(copy, entry), { recursive: true });
  await mkdir(join(copy, 'data'));
  for (const csv of (await readdir(join(ROOT, 'data'))).filter((n) => n.endsWith('.csv'))) await cp(join(ROOT, 'data', csv), join(copy, 'data', csv));
  await symlink(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  // The checkout's dist/, with its type declarations: tsc would take 20 s of CPU to write them again the same.
  await cp(join(ROOT, 'dist'), join(copy, 'dist'), { recursive: true });
  // prepack and postpack, run around the pack as npm runs them; the build without the declarations. Its --pack
  // removes what earlier builds left in dist/ for a CLI still running from them.
  const { scripts } = JSON.parse(await readFile(join(copy, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const [build, stripManifest] = scripts.prepack!.split(' && ');
  expect(build).toBe('node scripts/build.mjs --pack');
  await sh('/bin/sh', ['-c', `${build} --bundles-only`], copy);
  checkoutManifest = await readFile(join(copy, 'package.json'), 'utf8');
  await sh('/bin/sh', ['-c', stripManifest!], copy);
  await sh(NPM, ['pack', '--ignore-scripts', '--pack-destination', work], copy);
  await sh('/bin/sh', ['-c', scripts.postpack!], copy);
  restoredManifest = await readFile(join(copy, 'package.json'), 'utf8');
  tarball = join(work, (await readdir(work)).find((n) => n.endsWith('.tgz'))!);

  project = join(work, 'project');
  await mkdir(project);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  // Without install scripts: better-sqlite3's would download a prebuilt binary or compile for a minute. The
  // checkout's compiled addon stands in for it, the project pinned to the same version.
  const pinned = await Promise.all(['typescript', '@types/node', 'better-sqlite3'].map(async (n) => `${n}@${await installedVersion(n)}`));
  await sh(NPM, ['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', tarball, ...pinned], project);
  const sqlite = 'node_modules/better-sqlite3';
  await cp(join(ROOT, sqlite, 'build'), join(project, sqlite, 'build'), { recursive: true });
}, 180_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the packed package, installed in a scratch project', () => {
  it('ships dist/ without the sources; types a job; plans it; runs its demo; drives the API from a script', async () => {
    const { stdout: listing } = await sh('tar', ['-tzf', tarball], work);
    const files = listing.split('\n').map((f) => f.replace(/^package\//, ''));
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'dist/bin.js', 'dist/index.js', 'dist/types/index.d.ts', 'jobs/lookalikes.json', 'data/leads.csv']));
    // The README links every page of docs/.
    expect(files).toEqual(expect.arrayContaining(['docs/postgres.md', 'docs/api.md', 'docs/promises.md']));
    // No install-time script in the tarball (npm 11 warns of each on install, prepare included for a tarball),
    // and the checkout keeps its own.
    const { stdout: packed } = await sh('tar', ['-xzOf', tarball, 'package/package.json'], work);
    const packedScripts = Object.keys((JSON.parse(packed) as { scripts?: Record<string, string> }).scripts ?? {});
    expect(packedScripts.filter((s) => ['preinstall', 'install', 'postinstall', 'prepare', 'prepack', 'postpack'].includes(s))).toEqual([]);
    expect(restoredManifest).toBe(checkoutManifest);
    expect(files.filter((f) => /^(src|test|bench)\//.test(f))).toEqual([]);
    expect(files.some((f) => f.startsWith('migrations/') && f.endsWith('.sql'))).toBe(true);

    const bin = join(project, 'node_modules/.bin/netingest');
    await mkdir(join(project, 'jobs'));
    await writeFile(
      join(project, 'jobs/leads.ts'),
      "import { defineJob } from 'netingest';\n\n" +
        "export default defineJob({ operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, pages: 2 });\n",
    );
    await writeFile(join(project, 'leads.csv'), 'company_url\nnetwork.com/company/acme\nnot a url\n');
    await writeFile(
      join(project, 'types.ts'),
      "import { defineJob, plan, run, openDataset, exportTable, type PlanReport, type RunResult } from 'netingest';\n" +
        "export const report: Promise<PlanReport> = plan('jobs/leads.ts', { db: 'x.db' });\n" +
        "export const later = (): Promise<RunResult> => run({ db: 'x.db', jobs: ['jobs/leads.ts'] });\n" +
        "export const rows = async () => (await openDataset('x.db')).all<{ n: number }>('SELECT count(*) AS n FROM companies');\n" +
        "export const onPg = async () => (await openDataset('postgres://analyst@h/db')).query<{ n: number }>('SELECT $1::int AS n', [1]);\n" +
        "// @ts-expect-error all() is SQLite's: not on a PostgreSQL dataset\nexport const noAll = async () => (await openDataset('postgres://analyst@h/db')).all('SELECT 1');\n" +
        "export const out = () => exportTable({ db: 'x.db', table: 'companies', out: 'c.csv' });\n" +
        '// A typo in the operation must be a type error: were defineJob untyped, this directive would be.\n' +
        "// @ts-expect-error\ndefineJob({ operation: 'similar-company', input: { csv: 'x.csv', column: 'u' } });\n",
    );
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
        include: ['types.ts', 'jobs'],
      }),
    );
    await sh(join(project, 'node_modules/.bin/tsc'), ['-p', '.'], project);

    const plan = await sh(bin, ['plan', 'jobs/leads.ts', '--db', 'x.db'], project);
    expect(plan.stdout).toMatch(/^leads \(similar-companies\)\n {2}input: 2 tasks, 1 invalid row/);
    expect(plan.stdout).toMatch(/at most 2 calls/);

    const demo = await sh(bin, ['demo', '--dir', 'demo-out'], project);
    expect(demo.stdout).toContain(`The demo's database is ${join(project, 'demo-out/demo.db')}`);

    // query runs its statement in a child process, started from dist/ too.
    const query = await sh(bin, ['query', '--db', 'demo-out/demo.db', '--format', 'csv', 'SELECT count(*) AS n FROM companies'], project);
    expect(Number(query.stdout.split('\n')[1])).toBeGreaterThan(0);

    await writeFile(
      join(project, 'script.mjs'),
      "import { plan, openDataset, exportTable } from 'netingest';\n" +
        "const report = await plan('jobs/leads.ts', { db: 'demo-out/demo.db' });\n" +
        "const dataset = await openDataset('demo-out/demo.db');\n" +
        "const [{ n }] = dataset.all('SELECT count(*) AS n FROM companies WHERE name IS NOT NULL AND ?', [1]);\n" +
        'dataset.close();\n' +
        "const exported = await exportTable({ db: 'demo-out/demo.db', table: 'companies', out: 'companies.csv', parallel: { workers: 2, minRowidSpan: 1, chunkRowids: 5 } });\n" +
        'console.log(JSON.stringify({ tasks: report.tasks, companies: n, rows: exported.rows, workers: exported.workers }));\n',
    );
    const script = JSON.parse((await sh(process.execPath, ['script.mjs'], project)).stdout) as Record<string, number>;
    expect(script.tasks).toBe(2); // one URL, two pages
    expect(script.companies).toBeGreaterThan(0);
    // Export workers are started from dist/ as .js modules.
    expect(script.workers).toBe(2);
    expect(script.rows).toBeGreaterThanOrEqual(script.companies!);
    expect(existsSync(join(project, 'companies.csv'))).toBe(true);
  }, 120_000);

  it("its types check in a strict project without skipLibCheck, with only typescript and @types/node beside it", async () => {
    // The drivers' type packages are not installed: the public types must not need them (nor drizzle's, whose own
    // declarations fail this check), as a consumer's project has none of them.
    for (const absent of ['@types/better-sqlite3', '@types/pg']) expect(existsSync(join(project, 'node_modules', absent))).toBe(false);
    const dir = join(project, 'strict');
    await mkdir(dir);
    await writeFile(
      join(dir, 'uses.ts'),
      "import { defineJob, loadJob, plan, run, openDataset, exportTable, exportSql, NetingestError, type Job, type RunResult, type RunSummary } from 'netingest';\n" +
        "export const job = defineJob({ operation: 'search-jobs', input: { csv: 'q.csv' }, pages: 1 });\n" +
        "export const loaded: Promise<Job> = loadJob('jobs/leads.ts');\n" +
        "export const planned = async () => (await plan('jobs/leads.ts', { db: 'x.db' })).tasks;\n" +
        "export const ran = async (): Promise<RunSummary['status']> => ((await run({ db: 'x.db', jobs: [await loaded] })) satisfies RunResult).summary.status;\n" +
        "export const drift = async () => (await run({ db: 'x.db', jobs: ['jobs/leads.ts'] })).summary.drift.map((d) => d.message);\n" +
        "export const rows = async () => (await openDataset('x.db')).all<{ n: number }>('SELECT count(*) AS n FROM companies');\n" +
        "export const onPg = async () => (await openDataset('postgres://analyst@h/db')).query<{ n: number }>('SELECT $1::int AS n', [1]);\n" +
        "export const out = () => exportTable({ db: 'x.db', table: 'companies', stream: process.stdout, parallel: { workers: 2 } });\n" +
        "export const sql = () => exportSql({ db: 'x.db', sql: 'SELECT 1', out: 'one.csv', batchRows: 10 });\n" +
        'export const isOurs = (e: unknown) => e instanceof NetingestError;\n' +
        "// @ts-expect-error a typo in the operation is a type error here too\ndefineJob({ operation: 'similar-company', input: { csv: 'x.csv', column: 'u' } });\n",
    );
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, types: ['node'] },
        include: ['uses.ts'],
      }),
    );
    // tsc prints its errors on stdout and exits 2: the rejection names them.
    await sh(join(project, 'node_modules/.bin/tsc'), ['-p', 'strict'], project).catch((err: { stdout?: string }) => {
      throw new Error(`tsc without skipLibCheck failed:\n${err.stdout ?? String(err)}`);
    });
  }, 120_000);
});
