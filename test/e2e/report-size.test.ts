/**
 * The report of a year of nightly runs stays under 2 MB (a mail attachment, a CI artifact): the page's size is
 * deterministic for a given dataset, so it is asserted here; its render time is a figure of bench/report.bench.ts.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { writeNightlyDataset } from '../report/nightly-dataset.ts';
import { yearOfNights, YEAR_NOW } from '../report/year.ts';
import { writeReport } from '../../src/report/write-report.ts';

const dir = mkdtempSync(join(tmpdir(), 'netingest-report-size-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The bound: a page that travels by mail. */
const MAX_BYTES = 2 * 1024 * 1024;

it('writes the page of a year of nightly runs in under 2 MB, every run drawn', async () => {
  const db = join(dir, 'year.db');
  await writeNightlyDataset(db, yearOfNights());
  const written = await writeReport({ db, outFile: join(dir, 'year.html'), days: 365, now: YEAR_NOW });
  expect(written.figures.nights).toHaveLength(365);
  expect(statSync(written.path).size).toBe(written.bytes);
  expect(written.bytes).toBeLessThan(MAX_BYTES);
}, 120_000);
