/**
 * `netingest report` in a real headless Chromium, on both engines: the page makes no request and logs no error,
 * every chart is drawn with a size, its numbers are those of `status --json` and of SQL over the same dataset,
 * and no secret or markup from the dataset gets through. The screenshot is kept in test/.artifacts/.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachEngine, type TestDb } from './engines.ts';
import { nightlyRows, writeNightlyDataset, PLANTED_MARKUP, PLANTED_SECRET } from '../report/nightly-dataset.ts';
import { chromiumPath, chromiumSkipReason, visitPage, type PageVisit } from '../report/chromium.ts';
import { gatherFigures, writeReport, type WrittenReport } from '../../src/report/write-report.ts';
import { formatStatus, statusReport } from '../../src/runner/status-report.ts';
import { chartSpecs } from '../../src/report/charts.ts';

const ARTIFACTS = join(import.meta.dirname, '.artifacts');
const NOW = new Date('2026-06-30T06:00:00.000Z');
const NIGHTS = 40;
const DAYS = 30;
const INVALID_ROWS = 60;

/** What the test reads off the rendered page. */
interface Seen {
  charts: Array<{ id: string; width: number; height: number; shapes: number; label: string }>;
  figures: Record<string, string>;
  tables: Record<string, string[][][]>;
  scripts: number;
  images: number;
  text: string;
  csp: string | null;
  invalidListed: number;
  /** Legend entries of a chart that reach into its plot (a legend wrapped onto a second row, say). */
  overlaps: string[];
}

const READ_PAGE = `(() => {
  const cells = (t) => [...t.tBodies[0].rows].map((r) => [...r.cells].map((c) => c.textContent));
  return {
    charts: [...document.querySelectorAll('[data-chart]')].map((d) => {
      const svg = d.querySelector('svg');
      const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
      return { id: d.dataset.chart, width: box.width, height: box.height, shapes: svg ? svg.querySelectorAll('path, rect').length : 0, label: d.getAttribute('aria-label') };
    }),
    figures: Object.fromEntries([...document.querySelectorAll('[data-figure]')].map((e) => [e.dataset.figure, e.textContent])),
    tables: Object.fromEntries([...document.querySelectorAll('section[id]')].map((s) => [s.id, [...s.querySelectorAll('table')].map(cells)])),
    scripts: document.scripts.length,
    images: document.images.length,
    text: document.body.textContent,
    csp: document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.getAttribute('content') ?? null,
    invalidListed: document.querySelectorAll('#invalid tbody tr').length,
    // Words in a chart's top band (its legend) that reach below the top of its highest number (the plot's top).
    overlaps: [...document.querySelectorAll('[data-chart] svg')].flatMap((svg) => {
      const top = svg.getBoundingClientRect().top + svg.getBoundingClientRect().height * 0.4;
      const texts = [...svg.querySelectorAll('text')].map((t) => ({ s: t.textContent.trim(), r: t.getBoundingClientRect() })).filter((t) => t.s && t.r.height > 0);
      const numbers = texts.filter((t) => /^[-0-9,.% ]+$/.test(t.s));
      if (numbers.length === 0) return [];
      const plotTop = Math.min(...numbers.map((t) => t.r.top));
      return texts.filter((t) => /[a-z]/i.test(t.s) && t.r.bottom < top && t.r.bottom > plotTop + 1).map((t) => svg.parentElement.dataset.chart + ': "' + t.s + '"');
    }),
  };
})()`;

/** A number as the page prints it (999,415.5). */
const numberOf = (text: string | undefined) => Number(text?.replaceAll(',', ''));
const sumColumn = (rows: string[][], column: number) => Math.round(rows.reduce((n, r) => n + numberOf(r[column]), 0) * 1e6) / 1e6;

/**
 * A page as Chromium would see it from either engine: the dataset's name (the file or the URL) and zrender's ids,
 * numbered per chart drawn in the process, written the same way.
 */
function comparablePage(html: string, locator: string): string {
  const ids = new Map<string, string>();
  return html.replaceAll(locator, 'DATASET').replace(/zr\d+-[a-z]+-?\d*/g, (id) => ids.get(id) ?? ids.set(id, `zr-${ids.size}`).get(id)!);
}

/** The first engine's page and what Chromium read off it. */
let rendered: { page: string; visit: PageVisit<Seen> } | undefined;

forEachEngine('netingest report', (engine) => {
  describe.skipIf(!chromiumPath)(`the page in headless Chromium${chromiumPath ? '' : ` (skipped: ${chromiumSkipReason})`}`, () => {
    let dir: string;
    let db: TestDb;
    let written: WrittenReport;
    let visit: PageVisit<Seen>;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'netingest-report-'));
      db = await engine.open(dir);
      await writeNightlyDataset(db.locator, nightlyRows({ nights: NIGHTS, callsPerNight: 12, lastNight: new Date(NOW.getTime() - 5 * 3_600_000), invalidRows: INVALID_ROWS }));
      written = await writeReport({ db: db.locator, outFile: join(dir, 'report.html'), days: DAYS, now: NOW });
      // A page the same as the first engine's but for the dataset's name is the same to a browser: it is not
      // started again (~1 s of CPU); a page that differs is rendered and read on its own.
      const page = comparablePage(readFileSync(written.path, 'utf8'), db.locator);
      if (rendered?.page === page) visit = rendered.visit;
      else {
        visit = await visitPage<Seen>(pathToFileURL(written.path).href, READ_PAGE);
        rendered ??= { page, visit };
      }
      mkdirSync(ARTIFACTS, { recursive: true });
      writeFileSync(join(ARTIFACTS, `report-${engine.name}.png`), visit.screenshotPng);
    }, 180_000);
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('makes no request and logs no error, and forbids requests in its policy', () => {
      expect(visit.consoleErrors).toEqual([]);
      expect(visit.requests).toEqual([]);
      expect(visit.value.csp).toContain("default-src 'none'");
      expect(visit.value.scripts).toBe(0);
      expect(visit.value.images).toBe(0);
      expect(visit.screenshotPng.length).toBeGreaterThan(10_000);
      expect(visit.value.overlaps).toEqual([]);
    });

    it('draws every chart with a size, shapes and a text alternative', () => {
      expect(visit.value.charts.map((c) => c.id)).toEqual(['credits', 'outcomes', 'jobs', 'pace', 'drift', 'forecast']);
      for (const chart of visit.value.charts) {
        expect(chart.width, chart.id).toBeGreaterThan(300);
        expect(chart.height, chart.id).toBeGreaterThan(100);
        expect(chart.shapes, chart.id).toBeGreaterThan(5);
        expect(chart.label.length, chart.id).toBeGreaterThan(20);
      }
    });

    it('draws each job in one colour in every chart that names jobs', async () => {
      const { figures } = await gatherFigures({ db: db.locator, days: DAYS, now: NOW });
      const colours = new Map<string, Set<string>>();
      for (const spec of chartSpecs(figures).filter((c) => ['credits', 'pace', 'forecast'].includes(c.id))) {
        for (const s of spec.option.series as Array<{ name: string; itemStyle?: { color?: string } }>) {
          const job = s.name.replace(/: (achieved|rate set)$/, '');
          if (Object.hasOwn(figures.status.tasksByJob, job)) colours.set(job, (colours.get(job) ?? new Set()).add(s.itemStyle?.color ?? 'none'));
        }
      }
      expect(colours.size).toBe(2);
      for (const [job, seen] of colours) expect([...seen], job).toHaveLength(1);
    });

    it('shows the figures `status --json` prints, and the JSON (--json) holds that same status', async () => {
      const status = await statusReport({ db: db.locator, runs: 10 });
      const { figures } = await gatherFigures({ db: db.locator, days: DAYS, now: NOW });
      expect(figures.status).toEqual(status);
      const seen = visit.value.figures;
      expect(numberOf(seen['credits-all-runs'])).toBe(status.creditsSpentAllRuns);
      expect(numberOf(seen['credits-left'])).toBe(status.lastCounters!.balance);
      expect(numberOf(seen['credits-last-run'])).toBe(status.runs[0]!.creditsSpent);
      expect(numberOf(seen['last-exit-code'])).toBe(status.runs[0]!.exitCode);
      const jobs = Object.fromEntries(visit.value.tables.jobs![0]!.map((r) => [r[0], { done: numberOf(r[1]), not_found: numberOf(r[2]), failed: numberOf(r[3]) }]));
      for (const [job, counts] of Object.entries(status.tasksByJob)) expect(jobs[job]).toEqual({ done: counts.done ?? 0, not_found: counts.not_found ?? 0, failed: counts.failed ?? 0 });
      // `status` ends with the page it wrote, on either engine.
      expect(status.lastReport?.path).toBe(written.path);
      expect(formatStatus(status).trimEnd().split('\n').at(-1)).toBe(`Last report: ${written.path} (written ${NOW.toISOString()})`);
    });

    it("shows each chart's numbers as SQL over the same dataset gives them", async () => {
      const since = new Date(NOW.getTime() - DAYS * 86_400_000).toISOString();
      const sql = (await db.rows<{ n: number; spent: number; done: number; drifted: number }>(
        `SELECT count(*) AS n, sum(credits_spent) AS spent, sum(tasks_done) AS done,
          (SELECT sum(count) FROM answer_drift WHERE run_id IN (SELECT id FROM runs WHERE started_at >= ?)) AS drifted
          FROM runs WHERE started_at >= ?`, since, since))[0]!;
      const [credits] = visit.value.tables.credits!;
      const [outcomes] = visit.value.tables.outcomes!;
      expect(credits!.length).toBe(Number(sql.n));
      expect(sumColumn(credits!, 4)).toBe(Math.round(Number(sql.spent) * 1e6) / 1e6);
      expect(sumColumn(outcomes!, 2)).toBe(Number(sql.done));
      expect(sumColumn(visit.value.tables.drift![0]!, 5)).toBe(Number(sql.drifted));
      const [, byJob] = visit.value.tables.outcomes!;
      const inWindow = `run_id IN (SELECT id FROM runs WHERE started_at >= ?)`;
      expect(sumColumn(byJob!, 3)).toBe(await db.count(`SELECT count(*) FROM api_calls WHERE ${inWindow}`, since));
      expect(sumColumn(byJob!, 4)).toBe(await db.count(`SELECT count(*) FROM api_calls WHERE status = 200 AND ${inWindow}`, since));
      expect(sumColumn(byJob!, 6)).toBe(await db.count(`SELECT count(*) FROM api_calls WHERE status <> 200 AND status <> 404 AND ${inWindow}`, since));
      const failed = await db.count(`SELECT count(*) FROM tasks WHERE status = 'failed'`);
      expect(sumColumn(visit.value.tables.failures![0]!, 2)).toBe(failed);
    });

    it("shows each night's credits per job as the calls' own counters give them, adding up to the run's spend", async () => {
      const since = new Date(NOW.getTime() - DAYS * 86_400_000).toISOString();
      const [, byJob] = visit.value.tables.credits!;
      // Per run: the jobs' credits add up to what the run spent.
      const spent = await db.rows<{ id: number; spent: number }>(`SELECT id, credits_spent AS spent FROM runs WHERE started_at >= ? ORDER BY id`, since);
      const perRun = new Map<number, number>();
      for (const r of byJob!) perRun.set(numberOf(r[1]), Math.round(((perRun.get(numberOf(r[1])) ?? 0) + numberOf(r[4])) * 1e6) / 1e6);
      expect([...perRun.entries()]).toEqual(spent.map((r) => [Number(r.id), Math.round(Number(r.spent) * 1e6) / 1e6]));
      // Per job: each paid call at the step over the account's counter before it (whichever run), to the job of its task.
      const sql = await db.rows<{ job: string; credits: number; paid: number }>(
        `SELECT t.job, sum(a.credits_used - coalesce((SELECT max(b.credits_used) FROM api_calls b WHERE b.status = 200 AND b.credits_used < a.credits_used), 0)) AS credits,
          count(*) AS paid
          FROM api_calls a JOIN tasks t ON t.id = a.task_id
          WHERE a.status = 200 AND a.run_id IN (SELECT id FROM runs WHERE started_at >= ?) GROUP BY t.job ORDER BY t.job`, since);
      const jobs = [...new Set(byJob!.map((r) => r[2]!))].sort();
      expect(jobs).toEqual(sql.map((r) => r.job));
      for (const row of sql) {
        const mine = byJob!.filter((r) => r[2] === row.job);
        expect(sumColumn(mine, 4), row.job).toBe(Math.round(Number(row.credits) * 1e6) / 1e6);
        expect(sumColumn(mine, 3), row.job).toBe(Number(row.paid));
      }
    });

    it("draws each job's pace against the rate its run recorded, or --rate for a run that recorded none", async () => {
      const since = new Date(NOW.getTime() - DAYS * 86_400_000).toISOString();
      const [pace] = visit.value.tables.pace!;
      const sql = await db.rows<{ runId: number; job: string; calls: number; rates: string | Record<string, number> | null }>(
        `SELECT a.run_id AS "runId", t.job, count(*) AS calls, r.job_rates AS rates FROM api_calls a JOIN tasks t ON t.id = a.task_id JOIN runs r ON r.id = a.run_id
          WHERE r.started_at >= ? GROUP BY a.run_id, t.job, r.job_rates ORDER BY a.run_id, t.job`, since);
      expect(pace!.map((r) => [numberOf(r[1]), r[2], numberOf(r[3])])).toEqual(sql.map((r) => [Number(r.runId), r.job, Number(r.calls)]));
      const rateOf = (r: (typeof sql)[number]) => (r.rates === null ? null : (typeof r.rates === 'string' ? JSON.parse(r.rates) : r.rates)[r.job]);
      expect(pace!.map((r) => r[6])).toEqual(sql.map((r) => (rateOf(r) === null ? '60 (assumed: --rate)' : String(rateOf(r)))));
      expect(sql.some((r) => r.rates === null) && sql.some((r) => r.rates !== null)).toBe(true);
    });

    it('lists the first 50 invalid rows and counts the rest', () => {
      expect(visit.value.invalidListed).toBe(50);
      expect(visit.value.figures['invalid-more']).toContain(`and ${INVALID_ROWS - 50} more (${INVALID_ROWS} in all)`);
    });

    it('escapes every text and shows no secret', () => {
      const html = readFileSync(written.path, 'utf8');
      expect(html).not.toContain(PLANTED_SECRET);
      expect(html).not.toContain('<script');
      expect(visit.value.text).toContain(PLANTED_MARKUP.slice(0, 30));
      expect(visit.value.text).not.toContain(PLANTED_SECRET);
    });
  });
});
