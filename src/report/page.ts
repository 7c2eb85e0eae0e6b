/**
 * One self-contained HTML page, charts as inline SVG with text alternatives and tables. The CSP forbids any script or
 * request, so it opens the same from a mail or a CI artifact; every text from the dataset goes through escapeHtml().
 */
import * as echarts from 'echarts/core';
import { BarChart, LineChart } from 'echarts/charts';
import { GridComponent, LegendComponent } from 'echarts/components';
import { SVGRenderer } from 'echarts/renderers';
import type { ReportFigures } from './figures.ts';
import { chartSpecs, formatNumber, NO_JOB, runLabels, type ChartSpec } from './charts.ts';
import { statusInWords } from './headline.ts';

// Only the parts the report uses; the text alternative is the page's own (ECharts' aria needs a DOM).
echarts.use([BarChart, LineChart, GridComponent, LegendComponent, SVGRenderer]);

/**
 * The widths every chart is drawn at, in CSS pixels: the page shows the wide drawing on a screen it fits and the
 * narrow one on a phone (STYLE's media query), so its 12 px text is never scaled below 10 px. No script picks it.
 */
const CHART_WIDTH_PX = { wide: 960, narrow: 380 } as const;
type ChartLayout = keyof typeof CHART_WIDTH_PX;

/** A chart's height unless its spec sets one, before its legend's extra rows. */
const CHART_HEIGHT_PX = 320;

/** Nothing may be fetched: styles are inline, images none, no script at all. */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; base-uri 'none'; form-action 'none'";

/** A dataset text as HTML text or an attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** An ISO time as people read it: 2026-11-28 00:01 UTC. */
const when = (iso: string | null) => (iso === null ? '–' : escapeHtml(iso.replace(/^(\d{4}-\d\d-\d\d)T(\d\d:\d\d).*$/, '$1 $2 UTC')));

const e = (v: unknown): string => (v === null || v === undefined ? '–' : typeof v === 'number' ? formatNumber(v) : escapeHtml(String(v)));

export function renderPage(figures: ReportFigures, shownDataset: string): string {
  const specs = chartSpecs(figures);
  const tables = chartTables(figures);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(CONTENT_SECURITY_POLICY)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>netingest report: ${e(shownDataset)}</title>
<style>${STYLE}</style></head>
<body>
<header><h1>netingest report</h1><p class="meta">Dataset <code>${e(shownDataset)}</code> · written ${when(figures.generatedAt)} · runs of the last ${figures.days} days</p></header>
${headlineHtml(figures)}
<nav>${specs.map((s) => `<a href="#${s.id}">${e(s.title.split(':')[0])}</a>`).join(' · ')} · <a href="#failures">Failures</a> · <a href="#invalid">Invalid rows</a> · <a href="#anomalies">Anomalies</a></nav>
${specs.map((s) => chartSection(s, tables[s.id] ?? '')).join('\n')}
${failuresHtml(figures)}
${invalidHtml(figures)}
${anomaliesHtml(figures)}
<footer>Written by <code>netingest report</code>. Every number in a chart is in the table under it.</footer>
</body></html>
`;
}

function headlineHtml(f: ReportFigures): string {
  const h = f.headline;
  // A night of several workers is told by its worst run, and its credits by them all.
  const night = h.nightRunIds.length > 1 ? `the last night's ${h.nightRunIds.length} runs` : null;
  const run = h.lastRun
    ? `Run #${h.lastRun.id}${night ? ` (the worst of ${night})` : ''} ${h.lastRun.unfinished ? 'stopped without finishing' : e(statusInWords(h.lastRun.status))}, exit code <span data-figure="last-exit-code">${h.lastRun.exitCode === null ? 'not recorded' : e(h.lastRun.exitCode)}</span>, ${h.lastRun.endedAt === null ? 'no end recorded' : `ended <span data-figure="last-ended-at">${when(h.lastRun.endedAt)}</span>`}`
    : 'No run yet';
  const left = h.creditsLeft
    ? `<span data-figure="credits-left">${e(h.creditsLeft.balance)}</span> of ${e(h.creditsLeft.totalCredits)} left (${h.creditsLeft.source === 'live' ? "the service's credit check, now" : `last counters, ${when(h.creditsLeft.at)}`})`
    : 'balance not known yet';
  const deferred = h.deferred.tasks > 0 ? `<span data-figure="deferred">${e(h.deferred.tasks)}</span> tasks deferred${h.deferred.why ? ` because ${e(h.deferred.why)}` : ''}` : 'Nothing deferred';
  const credits = h.lastRun
    ? `Credits: <span data-figure="credits-last-run">${h.creditsSpentLastRun === null ? 'none' : e(h.creditsSpentLastRun)}</span> spent by ${night ?? 'the last run'}, <span data-figure="credits-all-runs">${e(h.creditsSpentAllRuns)}</span> by all runs; ${left}. ${deferred}.`
    : `Credits: ${left}.`;
  return `<section class="headline ${h.level}" aria-label="Summary">
<p class="action" data-figure="action">${escapeHtml(h.action).replace(/`([^`]+)`/g, '<code>$1</code>')}</p>
<p>${run}. ${credits}</p>
</section>`;
}

/** Room between a chart's legend and its plot (the top number's half height and a little air). */
const LEGEND_GAP_PX = 14;

/** The lowest edge of the chart's legend as laid out, in pixels from the chart's top (0: none). */
function legendBottomPx(chart: echarts.ECharts): number {
  // Not in ECharts' typings, but its public instance API (extensions reach views through it).
  const c = chart as unknown as { getModel(): { getComponent(type: string): unknown }; getViewOfComponentModel(m: unknown): { group: { y: number; getBoundingRect(): { y: number; height: number } } } | undefined };
  const legend = c.getModel().getComponent('legend');
  const group = legend ? c.getViewOfComponentModel(legend)?.group : undefined;
  if (!group) return 0;
  const box = group.getBoundingRect();
  return group.y + box.y + box.height;
}

/** `spec` drawn as SVG markup by ECharts' SSR renderer (no DOM, no browser): the page needs no script to show it. */
function renderChartSvg(spec: ChartSpec, layout: ChartLayout): string {
  const heightPx = spec.heightPx?.[layout] ?? CHART_HEIGHT_PX;
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width: CHART_WIDTH_PX[layout], height: heightPx });
  try {
    chart.setOption(spec.option);
    if (layout === 'narrow' && spec.narrow) chart.setOption(spec.narrow);
    makeRoomForLegend(chart, spec, { width: CHART_WIDTH_PX[layout], height: heightPx });
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}

/**
 * ECharts wraps a long legend onto more rows but never moves the plot down for them: the grid starts under the
 * legend as laid out, and the chart grows by as much, so the plot keeps its height (a narrow drawing's legend of
 * many jobs takes several rows).
 */
function makeRoomForLegend(chart: echarts.ECharts, spec: ChartSpec, size: { width: number; height: number }): void {
  const gridTop = (spec.option.grid as { top?: number } | undefined)?.top ?? 0;
  const top = Math.ceil(legendBottomPx(chart) + LEGEND_GAP_PX);
  if (top <= gridTop) return;
  chart.resize({ width: size.width, height: size.height + top - gridTop });
  chart.setOption({ grid: { top } });
}

/** Both drawings of a chart; CSS shows one. */
function chartDrawings(spec: ChartSpec): string {
  return (Object.keys(CHART_WIDTH_PX) as ChartLayout[]).map((layout) => `<div class="${layout}">${renderChartSvg(spec, layout)}</div>`).join('');
}

function chartSection(spec: ChartSpec, table: string): string {
  return `<section class="chart" id="${spec.id}">
<h2>${e(spec.title)}</h2>
<figure><div class="svg" role="img" aria-label="${e(spec.alt)}" data-chart="${spec.id}">${chartDrawings(spec)}</div>
<figcaption>${e(spec.alt)}</figcaption></figure>
${table}
</section>`;
}

/** A table: headers, rows of cells (numbers right-aligned), and a caption saying what it lists. */
function table(caption: string, head: string[], rows: unknown[][], attrs = ''): string {
  const cell = (v: unknown) => (typeof v === 'number' ? `<td class="n">${e(v)}</td>` : `<td>${e(v)}</td>`);
  // In a box of its own: a table wider than a phone scrolls there, not the page.
  return `<details${attrs}><summary>${e(caption)} (${rows.length} row${rows.length === 1 ? '' : 's'})</summary><div class="scroll"><table>
<thead><tr>${head.map((h) => `<th>${e(h)}</th>`).join('')}</tr></thead>
<tbody>${rows.map((r) => `<tr>${r.map(cell).join('')}</tr>`).join('\n')}</tbody></table></div></details>`;
}

function chartTables(f: ReportFigures): Record<string, string> {
  const labels = runLabels(f);
  const jobs = Object.entries(f.status.tasksByJob);
  return {
    credits:
      table('Numbers: credits and balance per run', ['night', 'run', 'status', 'exit code', 'credits spent', 'balance left'],
        f.nights.map((n) => [labels.get(n.runId), n.runId, n.status, n.exitCode, n.creditsSpent, n.balanceAfter])) +
      table('Credits per job and night', ['night', 'run', 'job', 'paid answers', 'credits spent'],
        f.creditsByJob.map((c) => [labels.get(c.runId), c.runId, c.job ?? NO_JOB, c.paidAnswers, c.credits])),
    outcomes:
      table('Numbers: outcomes per run', ['night', 'run', 'done', 'not found', 'failed', 'deferred', 'invalid rows', 'calls'],
        f.nights.map((n) => [labels.get(n.runId), n.runId, n.done, n.notFound, n.failed, n.deferred, n.invalidRows, n.calls])) +
      table('Outcomes per job: calls per run and job, by answer', ['night', 'run', 'job', 'calls', 'answered (200)', 'not found (404)', 'failed (other, or no answer)'],
        f.callsByJob.map((c) => [labels.get(c.runId), c.runId, c.job ?? '(no task: balance checks)', c.calls, c.answered, c.notFound, c.failedCalls])),
    jobs: table('Numbers: tasks per job and state', ['job', 'done', 'not found', 'failed', 'deferred', 'pending'],
      jobs.map(([job, c]) => [job, c.done ?? 0, c.not_found ?? 0, c.failed ?? 0, c.deferred ?? 0, c.pending ?? 0])),
    pace: table('Numbers: pace and latency per run and job', ['night', 'run', 'job', 'calls', 'minutes', 'calls per minute', 'rate set', 'average latency (ms)', 'longest (ms)'],
      f.pace.map((p) => [labels.get(p.runId), p.runId, p.job, p.calls, p.minutes, p.callsPerMinute, p.configuredFrom === 'recorded' ? p.configuredPerMinute : `${formatNumber(p.configuredPerMinute)} (assumed: --rate)`, p.latencyAvgMs, p.latencyMaxMs])),
    drift: table('Numbers: drift per member and run', ['operation', 'member path', 'kind', 'night', 'run', 'answers drifted', 'answers seen', '%'],
      f.drift.flatMap((s) => s.byRun.map((r) => [s.operation, s.path, s.kind, labels.get(r.runId), r.runId, r.count, r.seen, r.percent]))),
    forecast: table('Numbers: tasks and credits coming due', ['day', 'job', 'tasks', 'credits'], f.forecast.days.map((d) => [d.day, d.job, d.tasks, d.credits])) +
      `<p class="note">Costs per call: ${Object.entries(f.forecast.costPerCall).map(([op, c]) => `${e(op)} ${e(c.credits)}${c.learned ? '' : ' (not learned yet: the default)'}`).join(', ')}. A task comes due again every refresh age (at most once a day), and a not-found one costs nothing (404s are free). Refresh ages are each operation's default; a job file that sets <code>refreshAfterDays</code> moves its tasks.</p>`,
  };
}

function failuresHtml(f: ReportFigures): string {
  const rows = f.failures.map((x) => [x.code ?? '(none)', x.job, x.tasks, x.sample]);
  return `<section id="failures"><h2>Failures by error code</h2>
${rows.length === 0 ? '<p>No task is failed.</p>' : table('Failed tasks now, by job and error code, with one message (secrets masked)', ['error code', 'job', 'tasks', 'sample message'], rows, ' open')}
</section>`;
}

function invalidHtml(f: ReportFigures): string {
  const { listed, total } = f.invalidRows;
  const more = total > listed.length ? `<p data-figure="invalid-more">and ${total - listed.length} more (${total} in all): <code>netingest export invalid_inputs</code> lists them.</p>` : '';
  return `<section id="invalid"><h2>Invalid input rows</h2>
${total === 0 ? '<p>No invalid input row.</p>' : table(`Invalid rows by file and line (first ${listed.length} of ${total})`, ['file', 'line', 'job', 'field', 'why'], listed.map((r) => [r.file, r.line, r.job, r.field, r.reason]), ' open')}
${more}</section>`;
}

function anomaliesHtml(f: ReportFigures): string {
  const { byKind, listed } = f.anomalies;
  return `<section id="anomalies"><h2>Anomalies in stored answers</h2>
${byKind.length === 0 ? '<p>No anomaly.</p>' : table('Anomalies by operation and kind', ['operation', 'kind', 'count'], byKind.map((a) => [a.operation, a.kind, a.n]), ' open') +
  table(`The latest ${listed.length}`, ['run', 'operation', 'kind', 'request', 'path', 'why'], listed.map((a) => [a.runId, a.operation, a.kind, a.requestKey, a.path, a.reason]))}
</section>`;
}

/**
 * Charts' text is drawn at 12 px, so a drawing is never shown narrower than 10/12 of its width: 800 px wide, 317
 * narrow (a box narrower scrolls sideways on its own). The wide one shows from 860 px up (800, the body's padding
 * and a scrollbar), the narrow below; print takes the wide one.
 */
const STYLE = `
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;max-width:1000px;margin:0 auto;padding:16px 20px 40px;overflow-wrap:break-word}
h1{font-size:22px;margin:0}h2{font-size:17px;margin:28px 0 6px}.meta{color:#555;margin:2px 0 14px}
.headline{border-left:6px solid #2e7d32;background:#f1f8f1;padding:10px 16px;border-radius:4px}
.headline.warn{border-color:#ef8f00;background:#fff6e5}.headline.stop{border-color:#c62828;background:#fdecea}
.headline .action{font-size:18px;font-weight:600;margin:4px 0 6px}.headline p{margin:4px 0}
nav{margin:14px 0;font-size:14px}a{color:#0d47a1}
figure{margin:0}figcaption{color:#444;font-size:14px;margin:4px 0 6px}
.svg,.scroll{overflow-x:auto}.svg svg{width:100%;height:auto;display:block}
.svg .wide svg{min-width:800px}.svg .narrow{display:none}.svg .narrow svg{min-width:317px;max-width:600px}
@media (max-width:859.98px){.svg .wide{display:none}.svg .narrow{display:block}body{padding:12px 12px 32px}}
@media print{.svg .wide{display:block}.svg .narrow{display:none}.svg .wide svg{min-width:0}}
details{margin:6px 0}summary{cursor:pointer;color:#0d47a1;font-size:14px}
table{border-collapse:collapse;font-size:13px;margin:6px 0;width:100%}th,td{border-bottom:1px solid #e0e0e0;padding:3px 8px;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f5f5f5}code{font-size:13px}.note{font-size:13px;color:#555}
footer{margin-top:30px;color:#777;font-size:13px}
@media print{details{display:block}details>summary{display:none}}
`;
