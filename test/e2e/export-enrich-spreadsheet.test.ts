/**
 * `enrich --excel` opened by a real spreadsheet: LibreOffice (headless) reads the CSV as a person's Calc would
 * (the delimiter given, the encoding guessed from the file) and writes what its cells show. Skipped, with a
 * line saying so, where LibreOffice is not installed (Debian: `apt-get install libreoffice-calc-nogui`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { openDatabase } from '../../src/store/open.ts';
import { filterKey } from '../../src/jobs/request-keys.ts';
import { main } from '../../src/cli/main.ts';

const soffice = ['soffice', 'libreoffice'].find((bin) => spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0);
if (!soffice) console.warn('skipped: enrich --excel opened in LibreOffice: no soffice/libreoffice on PATH (apt-get install libreoffice-calc-nogui)');

const AT = '2026-11-20T08:00:00.000Z';
const ACCOUNT = { location: ['germany'] };
const co = (slug: string) => `https://www.network.com/company/${slug}`;
let dir: string;
let db: string;
let job: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-sheet-'));
  db = join(dir, 'data.db');
  // As sales-ops save it from Excel in Germany: semicolons, a BOM, CRLF.
  writeFileSync(join(dir, 'leads.csv'), '\ufeffcompany_url;owner;zip\r\nnetwork.com/company/acme;Müller;01234\r\n');
  job = join(dir, 'lookalikes.json');
  writeFileSync(job, JSON.stringify({ name: 'lookalikes', operation: 'similar-companies', input: { csv: join(dir, 'leads.csv'), column: 'company_url' }, request: { account: ACCOUNT, num: 2 } }));
  const database = openDatabase(db);
  const { sqlite } = database;
  sqlite.prepare(`INSERT INTO companies (url, name, universal_name, phone, first_seen_at, updated_at) VALUES (?, '=1+1', 'x', '+4930123456', ?, ?)`).run(co('x'), AT, AT);
  sqlite.prepare(`INSERT INTO similar_companies (reference_url, filter_key, company_url, filters, rank, page, relevancy_score,
    relevancy_grade, first_seen_at, last_seen_at) VALUES (?, ?, ?, '{}', 1, 1, 0.9, 'A', ?, ?)`).run(co('acme'), filterKey(ACCOUNT), co('x'), AT, AT);
  database.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The cells LibreOffice shows for `file`, read with `delimiter` and the encoding it guesses, by column name. */
function openInCalc(file: string, delimiter: string): Record<string, string> {
  const out = join(dir, 'calc');
  // Filter options: delimiter, quote, charset left empty (Calc guesses, from the BOM), first line 1.
  // Written back as UTF-8 CSV of the cells as shown.
  execFileSync(soffice!, [
    `-env:UserInstallation=file://${join(dir, 'lo-profile')}`,
    '--headless',
    `--infilter=CSV:${delimiter.charCodeAt(0)},34,,1`,
    '--convert-to', 'csv:Text - txt - csv (StarCalc):44,34,76,1',
    '--outdir', out,
    file,
  ], { stdio: 'ignore', timeout: 90_000 });
  const [header, row] = parse(readFileSync(join(out, file.split('/').pop()!), 'utf8')) as string[][];
  return Object.fromEntries(header!.map((h, i) => [h, row![i]!]));
}

describe.skipIf(!soffice)('enrich --excel in LibreOffice', () => {
  it('keeps Müller, the + of a phone number and the leading zero of a postcode; a formula is shown, not run', async () => {
    const out = join(dir, 'leads-excel.csv');
    const io = { stdout: new PassThrough(), stderr: new PassThrough() };
    expect(await main(['enrich', job, '--db', db, '--out', out, '--excel'], io)).toBe(0);
    const cells = openInCalc(out, ';');
    expect(cells.owner).toBe('Müller');
    // The `'` that keeps them text shows in the cell (docs/export.md); the number is whole.
    expect(cells.zip).toMatch(/^'?01234$/);
    expect(cells.similar_1_phone).toMatch(/^'?\+4930123456$/);
    expect(cells.similar_1_name).toBe("'=1+1");
    expect(cells.similar_count).toBe('1');
  }, 120_000);
});
