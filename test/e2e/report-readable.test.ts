/**
 * The report stays readable with many jobs of long names and on a phone: every job of the tasks-per-job chart is
 * labelled (no label hidden for overlapping), and in headless Chromium at 390 px (a phone) and 1280 px the page
 * never scrolls sideways, charts and tables included, and no chart's text is shown smaller than 10 px.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nightlyRows, writeNightlyDataset } from '../report/nightly-dataset.ts';
import { chromiumPath, chromiumSkipReason, visitPage } from '../report/chromium.ts';
import { gatherFigures } from '../../src/report/write-report.ts';
import { renderPage } from '../../src/report/page.ts';
import type { ReportFigures } from '../../src/report/figures.ts';

const NOW = new Date('2026-06-30T06:00:00.000Z');

/** Job names as users give them: long, many, sharing their first words. */
const LONG_JOBS = [
  'lookalikes-dach-saas', 'lookalikes-france-fintech', 'lookalikes-nordics-healthtech', 'lookalikes-benelux-logistics',
  'post-engagement-weekly', 'post-engagement-ceo-announcements', 'post-engagement-competitor-launches',
  'job-search-berlin-data', 'job-search-munich-platform-eng', 'job-search-remote-ml-research', 'job-search-hamburg-product',
];

const dir = mkdtempSync(join(tmpdir(), 'netingest-report-readable-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let figures: ReportFigures;
let page: string;

beforeAll(async () => {
  const db = join(dir, 'nightly.db');
  await writeNightlyDataset(db, nightlyRows({ nights: 20, callsPerNight: 12, lastNight: new Date(NOW.getTime() - 5 * 3_600_000), invalidRows: 5 }));
  figures = (await gatherFigures({ db, days: 30, now: NOW })).figures;
  figures.status.tasksByJob = Object.fromEntries(LONG_JOBS.map((job, i) => [job, { done: 10 + i, not_found: 2, pending: i % 3 }]));
  page = renderPage(figures, db);
}, 60_000);

/** The texts drawn in one of a chart's drawings (`wide` or `narrow`). */
function drawnTexts(html: string, chart: string, layout: string): string[] {
  const section = html.slice(html.indexOf(`data-chart="${chart}"`));
  const drawing = section.slice(section.indexOf(`<div class="${layout}">`));
  const svg = drawing.slice(0, drawing.indexOf('</svg>'));
  return [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!);
}

it('labels every job of the tasks-per-job chart, on a wide screen and on a phone', () => {
  for (const layout of ['wide', 'narrow']) expect(drawnTexts(page, 'jobs', layout).filter((t) => LONG_JOBS.includes(t)), layout).toEqual(LONG_JOBS);
});

/** What the browser measures: the page's width against the window's, and the smallest chart text on screen. */
interface Fit {
  viewport: number;
  pageWidth: number;
  smallestText: { px: number; text: string };
  widestChart: number;
}

// Every table unfolded (a wide one must scroll in its box, not the page); a text's size on screen is its font size
// times the scale its SVG is drawn at (an axis name is turned: the scale is the matrix's length, not its a).
const MEASURE = `(() => {
  for (const d of document.querySelectorAll('details')) d.open = true;
  const texts = [...document.querySelectorAll('[data-chart] svg text')].filter((t) => t.getBoundingClientRect().height > 0 && t.textContent.trim());
  const sizes = texts.map((t) => { const m = t.getScreenCTM(); return { px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b), text: t.textContent }; });
  const charts = [...document.querySelectorAll('[data-chart]')].map((c) => c.getBoundingClientRect().right);
  return {
    viewport: window.innerWidth,
    pageWidth: document.documentElement.scrollWidth,
    smallestText: sizes.reduce((m, s) => (s.px < m.px ? s : m), { px: Infinity, text: '' }),
    widestChart: Math.max(...charts),
  };
})()`;

describe.skipIf(!chromiumPath)(`the page on a phone and a wide screen${chromiumPath ? '' : ` (skipped: ${chromiumSkipReason})`}`, () => {
  for (const width of [390, 1280]) {
    it(`fits ${width} px without sideways scrolling, its charts' text at 10 px or more`, async () => {
      const file = join(dir, `report-${width}.html`);
      writeFileSync(file, page);
      const { value, consoleErrors } = await visitPage<Fit>(pathToFileURL(file).href, MEASURE, { width, height: 900 });
      expect(consoleErrors).toEqual([]);
      expect(value.viewport).toBe(width);
      expect(value.pageWidth).toBeLessThanOrEqual(width);
      expect(value.widestChart).toBeLessThanOrEqual(width);
      expect(value.smallestText.px, value.smallestText.text).toBeGreaterThanOrEqual(10);
    }, 60_000);
  }
});
