/**
 * Upsert throughput of normalized company rows: the similar-companies ingestor (canonical URLs, value mapping,
 * child sets replaced, link rows) against a plain better-sqlite3 prepared-statement loop writing the same rows
 * from pre-built parameter arrays. Both run in one transaction on a fresh, migrated file, in the same process,
 * alternately; the best of each is kept. Run: `npx tsx bench/db-upsert.bench.ts`.
 */
import { countryName } from '../src/operations/stored-values.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openDatabase, type Database } from '../src/store/open.ts';
import { createIngestor } from '../src/store/ingest/index.ts';
import { TABLE_STATEMENTS } from '../src/store/ingest/tables.ts';
import type { SimilarCompaniesSubject } from '../src/operations/similar-companies.ts';
import type { CompanyRecord } from '../src/spec/types.ts';
import { formatBenchTable, type BenchResult } from './bench-result.ts';
import { company, similarRequest, similarResponse, type SimilarCompaniesResponse } from '../test/support/db-fixtures.ts';

/** Bench parameters, every default here. */
export const DB_UPSERT_BENCH = {
  companies: 20_000,
  pageSize: 10,
  rounds: 3,
  minRatio: 0.5,
  minRowsPerSecond: 50_000,
} as const;

const SEEN_AT = '2026-11-22T13:45:00.000Z';

interface Page {
  req: SimilarCompaniesSubject;
  res: SimilarCompaniesResponse;
}

function pages(): Page[] {
  const out: Page[] = [];
  const { companies, pageSize } = DB_UPSERT_BENCH;
  for (let p = 0; p * pageSize < companies; p++) {
    const content: CompanyRecord[] = [];
    for (let i = 0; i < pageSize; i++) content.push(company(p * pageSize + i));
    out.push({ req: { ...similarRequest(p + 1, pageSize), referenceUrl: `https://network.com/company/ref-${p % 50}` }, res: similarResponse(content, p + 1) });
  }
  return out;
}

/** The rows the ingestor writes, as plain parameter arrays (built outside the timed loop). */
interface PlainRows {
  companies: unknown[][];
  deletes: string[];
  locations: unknown[][];
  values: Array<[table: string, params: unknown[]]>;
  similar: unknown[][];
}

function plainRows(input: Page[]): PlainRows {
  const rows: PlainRows = { companies: [], deletes: [], locations: [], values: [], similar: [] };
  for (const { req, res } of input) {
    const filters = JSON.stringify(req.filters);
    res.data.content.forEach((c, i) => {
      const url = `https://network.com/company/${c.universalName}`;
      rows.companies.push([url, c.name, c.universalName, c.type, c.objectUrn, c.description, c.phone, BigInt(c.followers as number),
        c.website, c.logo, null, c.tagline as string, c.foundedYear, c.staff.total, c.staff.range.start, c.staff.range.end,
        JSON.stringify(c.fundingData), SEEN_AT, SEEN_AT]);
      rows.deletes.push(url);
      const hq = c.locations.headquarter;
      rows.locations.push([url, 1, 1, hq.city, hq.country, hq.geographicArea, 1n, hq.line1, hq.line2, hq.postalCode, countryName(hq.country)]);
      c.locations.other.forEach((a, j) =>
        rows.locations.push([url, j + 2, 0, a.city, a.country, a.geographicArea, null, a.line1, a.line2, a.postalCode, countryName(a.country)]));
      c.industries.forEach((v, j) => rows.values.push(['company_industries', [url, j + 1, v]]));
      (c.specialities ?? []).forEach((v, j) => rows.values.push(['company_specialities', [url, j + 1, v]]));
      (c.hashtags ?? []).forEach((v, j) => rows.values.push(['company_hashtags', [url, j + 1, v]]));
      rows.similar.push([req.referenceUrl, req.filterKey, url, filters, i + 1, req.page, c.relevancy.score, c.relevancy.value, SEEN_AT, SEEN_AT]);
    });
  }
  return rows;
}

function withFreshDb<T>(fn: (database: Database) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'netingest-bench-db-'));
  const database = openDatabase(join(dir, 'bench.db'));
  try {
    return fn(database);
  } finally {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function timeIngestor(input: Page[]): number {
  return withFreshDb((database) => {
    const ingestor = createIngestor(database);
    const start = process.hrtime.bigint();
    database.sqlite.transaction(() => {
      for (const { req, res } of input) ingestor.ingestAnswer(req, res, SEEN_AT);
    })();
    return Number(process.hrtime.bigint() - start) / 1e9;
  });
}

function timePlainLoop(rows: PlainRows): number {
  return withFreshDb(({ sqlite }) => {
    const upsertCompany = sqlite.prepare(TABLE_STATEMENTS.companies!.sql);
    const deletes = ['company_locations', 'company_industries', 'company_specialities', 'company_hashtags'].map((t) =>
      sqlite.prepare(`DELETE FROM ${t} WHERE company_url = ?`));
    const insertLocation = sqlite.prepare(TABLE_STATEMENTS.company_locations!.sql);
    const insertValue = new Map(['company_industries', 'company_specialities', 'company_hashtags'].map((t) =>
      [t, sqlite.prepare(`INSERT INTO ${t} (company_url, position, value) VALUES (?, ?, ?)`)]));
    const upsertSimilar = sqlite.prepare(TABLE_STATEMENTS.similar_companies!.sql);
    const start = process.hrtime.bigint();
    sqlite.transaction(() => {
      for (const params of rows.companies) upsertCompany.run(...params);
      for (const url of rows.deletes) for (const d of deletes) d.run(url);
      for (const params of rows.locations) insertLocation.run(...params);
      for (const [table, params] of rows.values) insertValue.get(table)!.run(...params);
      for (const params of rows.similar) upsertSimilar.run(...params);
    })();
    return Number(process.hrtime.bigint() - start) / 1e9;
  });
}

/** Runs the bench and returns its figures (company rows per second, ingestor vs plain loop). */
export async function runDbUpsertBench(): Promise<BenchResult[]> {
  const input = pages();
  const rows = plainRows(input);
  const n = DB_UPSERT_BENCH.companies;
  let ingestorBest = Infinity;
  let plainBest = Infinity;
  timeIngestor(input.slice(0, 50)); // warm-up: JIT and page cache
  for (let r = 0; r < DB_UPSERT_BENCH.rounds; r++) {
    plainBest = Math.min(plainBest, timePlainLoop(rows));
    ingestorBest = Math.min(ingestorBest, timeIngestor(input));
  }
  const value = n / ingestorBest; // company records per second
  const baseline = n / plainBest;
  const ratio = value / baseline;
  const childRows = rows.locations.length + rows.values.length;
  const rowsWritten = n * 2 + childRows;
  const rowsPerSecond = rowsWritten / ingestorBest;
  return [
    {
      // The guide's speed figures are rows/s; a company here is 1 company row, 1 link row and its child rows.
      name: 'db upsert: normalized company rows via ingestor',
      value: rowsPerSecond,
      unit: 'rows/s',
      target: `>= ${DB_UPSERT_BENCH.minRatio} of plain loop and >= ${DB_UPSERT_BENCH.minRowsPerSecond.toLocaleString('en-US')}/s`,
      baseline: rowsWritten / plainBest,
      ratio,
      met: ratio >= DB_UPSERT_BENCH.minRatio && rowsPerSecond >= DB_UPSERT_BENCH.minRowsPerSecond,
    },
    {
      name: `db upsert: company records via ingestor (${(rowsWritten / n).toFixed(1)} rows each)`,
      value,
      unit: 'companies/s',
      target: `>= ${DB_UPSERT_BENCH.minRatio} of plain loop`,
      baseline,
      ratio,
      met: ratio >= DB_UPSERT_BENCH.minRatio,
    },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(formatBenchTable(await runDbUpsertBench()));
}
