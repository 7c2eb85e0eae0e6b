/** The report's charts as ECharts options, each with its title, axes, units and a text alternative to the picture. */
import type { ReportFigures } from './figures.ts';
import { plural } from '../plural.ts';
import { roundCredits } from '../credits/credit-meter.ts';

/** One chart: its id (the page's anchor), title, the text alternative, and the ECharts option. */
export interface ChartSpec {
  id: string;
  title: string;
  alt: string;
  option: Record<string, unknown>;
  /** The chart's height, wide and narrow, when it depends on the data (a bar per job); else the page's default. */
  heightPx?: { wide: number; narrow: number };
  /** Merged over `option` (ECharts' setOption merge) for the narrow drawing a phone shows. */
  narrow?: Record<string, unknown>;
}

/** One formatter for the whole page: toLocaleString() with options builds a new one per call. */
const NUMBER_FORMAT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 6 });

/** A number as people read it: 999,415.5 (en-US grouping, at most 6 decimals; credits can be fractional). */
export const formatNumber = (n: number): string => NUMBER_FORMAT.format(n);
const fmt = formatNumber;

/** Colours of task outcomes, the same in every chart. */
export const OUTCOME_COLOURS = { done: '#2e7d32', notFound: '#9e9e9e', failed: '#c62828', deferred: '#ef8f00', invalidRows: '#6a1b9a' } as const;

/** Drift lines drawn at most (the most frequent members); the table lists them all. */
const DRIFT_LINES = 8;

/** Widest bar: a run or two must not fill the chart with one slab. */
const BAR_MAX_PX = 48;

/** Lines show a dot per point up to this many points (one point alone is otherwise invisible). */
const SYMBOLS_UP_TO = 60;

/** Every chart of the page, in page order. */
export function chartSpecs(f: ReportFigures): ChartSpec[] {
  return [creditsChart(f), outcomesChart(f), jobsChart(f), paceChart(f), driftChart(f), forecastChart(f)];
}

/**
 * Category labels for runs: the night each started, with its id where two share a night, and a run with no end written
 * marked (its figures are what its stored calls show so far).
 */
export function runLabels(f: ReportFigures): Map<number, string> {
  const perDay = new Map<string, number>();
  for (const n of f.nights) perDay.set(n.startedAt.slice(0, 10), (perDay.get(n.startedAt.slice(0, 10)) ?? 0) + 1);
  return new Map(f.nights.map((n) => {
    const day = n.startedAt.slice(0, 10);
    return [n.runId, `${perDay.get(day)! > 1 ? `${day} #${n.runId}` : day}${openMark(n)}`];
  }));
}

/** How a run with no end written is marked: gone without finishing, or still going. */
const openMark = (n: ReportFigures['nights'][number]) => (n.unfinished ? ' (unfinished)' : n.status === 'running' ? ' (running)' : '');

const base = (yName: string, categories: string[], xName = 'night (UTC)') => ({
  animation: false,
  grid: { left: 70, right: 70, top: 40, bottom: 60 },
  legend: { top: 4, type: 'plain' },
  xAxis: { type: 'category', data: categories, name: xName, nameLocation: 'middle', nameGap: 35, axisLabel: { hideOverlap: true } },
  yAxis: { type: 'value', name: yName, nameLocation: 'middle', nameGap: 50 },
});

/** A job's colour, the same in the credits, pace and forecast charts (the palette ECharts would give them in turn). */
const JOB_COLOURS = ['#1565c0', '#ef6c00', '#2e7d32', '#6a1b9a', '#00838f', '#ad1457', '#5d4037', '#9e9d24'];
const colourOfJob = (jobs: readonly string[], job: string) => JOB_COLOURS[jobs.indexOf(job) % JOB_COLOURS.length]!;

/** The jobs of the credits and pace charts, in name order. */
export function chartJobs(f: ReportFigures): string[] {
  return [...new Set([...f.creditsByJob.map((c) => c.job ?? NO_JOB), ...f.pace.map((p) => p.job)])].sort();
}

/** How a run's spend that no job's call shows is named (every paid answer of the run unreadable, say). */
export const NO_JOB = '(no job)';

function creditsChart(f: ReportFigures): ChartSpec {
  const labels = runLabels(f);
  const x = f.nights.map((n) => labels.get(n.runId)!);
  const spent = f.nights.map((n) => n.creditsSpent ?? 0);
  const most = f.nights.reduce<(typeof f.nights)[number] | null>((m, n) => ((n.creditsSpent ?? 0) > (m?.creditsSpent ?? -1) ? n : m), null);
  const left = f.headline.creditsLeft;
  const jobs = chartJobs(f);
  const byJob = new Map(jobs.map((job) => [job, new Map<number, number>()]));
  for (const c of f.creditsByJob) byJob.get(c.job ?? NO_JOB)!.set(c.runId, c.credits);
  const jobTotals = jobs.map((job) => [job, sum([...byJob.get(job)!.values()])] as const).filter(([, n]) => n > 0);
  return {
    id: 'credits',
    title: 'Credits spent per night by each job, and the balance left after each run',
    alt:
      `${plural(f.nights.length, 'run')} in the last ${f.days} days spent ${fmt(sum(spent))} credits` +
      (jobTotals.length > 0 ? ` (${jobTotals.map(([job, n]) => `${job} ${fmt(n)}`).join(', ')})` : '') +
      (most ? `; the most, ${fmt(most.creditsSpent ?? 0)}, on ${labels.get(most.runId)}` : '') +
      openRunsNote(f) +
      (left ? `; ${fmt(left.balance)} of ${fmt(left.totalCredits)} credits are left.` : '; the balance is not known yet.'),
    option: {
      ...base('credits spent', x),
      yAxis: [
        { type: 'value', name: 'credits spent', nameLocation: 'middle', nameGap: 50 },
        // Not from zero: a balance of 99,000 of 100,000 would be a flat line at the top.
        { type: 'value', name: 'balance left (credits)', nameLocation: 'middle', nameGap: 60, splitLine: { show: false }, scale: true },
      ],
      series: [
        ...jobs.map((job) => ({
          type: 'bar', stack: 'credits', name: job, data: f.nights.map((n) => byJob.get(job)!.get(n.runId) ?? 0),
          itemStyle: { color: colourOfJob(jobs, job) }, barMaxWidth: BAR_MAX_PX,
        })),
        { type: 'line', name: 'balance left (all jobs)', yAxisIndex: 1, data: f.nights.map((n) => n.balanceAfter), showSymbol: f.nights.length <= SYMBOLS_UP_TO, connectNulls: true, itemStyle: { color: '#37474f' } },
      ],
    },
  };
}

/** The runs whose end is not written, said in the credits sentence: their bars are what their stored answers show. */
function openRunsNote(f: ReportFigures): string {
  return f.nights
    .filter((n) => n.status === 'running')
    .map((n) => (n.unfinished ? `; run #${n.runId} stopped without finishing: its bar is what its stored answers spent` : `; run #${n.runId} is still running: its bar is its spend so far`))
    .join('');
}

function outcomesChart(f: ReportFigures): ChartSpec {
  const labels = runLabels(f);
  const x = f.nights.map((n) => labels.get(n.runId)!);
  const outcomes = [
    ['done', 'done'], ['notFound', 'not found'], ['failed', 'failed'], ['deferred', 'deferred'], ['invalidRows', 'invalid rows'],
  ] as const;
  const series = outcomes.map(([key, name]) => ({ type: 'bar', stack: 'outcome', name, data: f.nights.map((n) => n[key]), itemStyle: { color: OUTCOME_COLOURS[key] }, barMaxWidth: BAR_MAX_PX }));
  const totals = Object.fromEntries(series.map((s) => [s.name, sum(s.data)]));
  return {
    id: 'outcomes',
    title: 'Task outcomes per run (all jobs of the run)',
    alt: `Over ${plural(f.nights.length, 'run')}: ${Object.entries(totals).map(([k, v]) => `${fmt(v)} ${k}`).join(', ')}.`,
    option: { ...base('tasks', x), series },
  };
}

/** Room per job in the tasks-per-job chart: one bar and the air around it (on a phone, its name above it too). */
const JOB_ROW_PX = { wide: 30, narrow: 44 } as const;

/** Widest job name in the tasks-per-job chart before it is cut with an ellipsis (the table and text name it whole). */
const JOB_LABEL_PX = { wide: 320, narrow: 340 } as const;

/** A phone's bar in the tasks-per-job chart: thin enough for the job's name to sit above it within its row. */
const NARROW_JOB_BAR_PX = 16;

function jobsChart(f: ReportFigures): ChartSpec {
  const jobs = Object.keys(f.status.tasksByJob);
  const statuses = ['done', 'not_found', 'failed', 'deferred', 'pending'] as const;
  const colour = { done: OUTCOME_COLOURS.done, not_found: OUTCOME_COLOURS.notFound, failed: OUTCOME_COLOURS.failed, deferred: OUTCOME_COLOURS.deferred, pending: '#90caf9' };
  const rows = Math.max(jobs.length, 2);
  return {
    id: 'jobs',
    title: 'Tasks per job, by their state now',
    alt: jobs.length === 0 ? 'No job has tasks yet.' : jobs.map((j) => `${j}: ${Object.entries(f.status.tasksByJob[j]!).map(([s, count]) => `${fmt(count)} ${s.replace('_', ' ')}`).join(', ')}`).join('; ') + '.',
    // Bars lie down, a job's name before each: names as long as users give them, each labelled (interval 0),
    // and the chart grows a row per job instead of squeezing them.
    heightPx: { wide: 110 + JOB_ROW_PX.wide * rows, narrow: 110 + JOB_ROW_PX.narrow * rows },
    option: {
      animation: false,
      grid: { left: 10, right: 30, top: 40, bottom: 45, outerBoundsMode: 'same', outerBoundsContain: 'axisLabel' },
      legend: { top: 4, type: 'plain' },
      yAxis: { type: 'category', data: jobs, inverse: true, axisLabel: { interval: 0, width: JOB_LABEL_PX.wide, overflow: 'truncate', ellipsis: '…' } },
      xAxis: { type: 'value', name: 'tasks', nameLocation: 'middle', nameGap: 28 },
      series: statuses.map((s) => ({ type: 'bar', stack: 'state', name: s.replace('_', ' '), data: jobs.map((j) => f.status.tasksByJob[j]![s] ?? 0), itemStyle: { color: colour[s] }, barMaxWidth: BAR_MAX_PX })),
    },
    narrow: narrowJobs(statuses.length),
  };
}

/** On a phone a name beside its bar leaves the bar no room: each job's name sits above its bar, across the plot. */
function narrowJobs(seriesCount: number): Record<string, unknown> {
  return {
    grid: { left: 12, outerBoundsMode: 'none' },
    yAxis: {
      axisTick: { show: false },
      axisLine: { show: false },
      axisLabel: { inside: true, align: 'left', verticalAlign: 'bottom', margin: 0, padding: [0, 0, NARROW_JOB_BAR_PX / 2 + 3, 1], width: JOB_LABEL_PX.narrow },
    },
    series: Array.from({ length: seriesCount }, () => ({ barWidth: NARROW_JOB_BAR_PX })),
  };
}

function paceChart(f: ReportFigures): ChartSpec {
  const labels = runLabels(f);
  const runIds = f.nights.map((n) => n.runId).filter((id) => f.pace.some((p) => p.runId === id));
  const x = runIds.map((id) => labels.get(id)!);
  const jobs = chartJobs(f).filter((job) => f.pace.some((p) => p.job === job));
  const paceOf = (job: string, runId: number) => f.pace.find((p) => p.job === job && p.runId === runId);
  const latency = runIds.map((id) => avg(f.pace.filter((p) => p.runId === id).map((p) => p.latencyAvgMs)));
  return {
    id: 'pace',
    title: 'Calls per minute achieved by each job against the rate it was run at, and answer latency',
    alt: paceAlt(f, jobs, latency),
    option: {
      ...base('calls per minute', x),
      yAxis: [
        { type: 'value', name: 'calls per minute', nameLocation: 'middle', nameGap: 50 },
        { type: 'value', name: 'latency (ms)', nameLocation: 'middle', nameGap: 55, splitLine: { show: false } },
      ],
      series: [
        ...jobs.flatMap((job) => [
          { type: 'line', name: `${job}: achieved`, data: runIds.map((id) => paceOf(job, id)?.callsPerMinute ?? null), connectNulls: true, showSymbol: runIds.length <= SYMBOLS_UP_TO, itemStyle: { color: colourOfJob(jobs, job) } },
          {
            // A step, not a slope: the rate changes from one run to the next, never in between.
            type: 'line', name: `${job}: rate set`, data: runIds.map((id) => paceOf(job, id)?.configuredPerMinute ?? null), connectNulls: true, showSymbol: false,
            step: 'end', lineStyle: { type: 'dashed' }, itemStyle: { color: colourOfJob(jobs, job) },
          },
        ]),
        { type: 'line', name: 'average latency (ms)', yAxisIndex: 1, data: latency, connectNulls: true, showSymbol: runIds.length <= SYMBOLS_UP_TO, itemStyle: { color: '#9e9e9e' }, lineStyle: { type: 'dotted' } },
      ],
    },
  };
}

function paceAlt(f: ReportFigures, jobs: readonly string[], latency: ReadonlyArray<number | null>): string {
  const perJob = jobs.flatMap((job) => {
    const runs = f.pace.filter((p) => p.job === job && p.callsPerMinute !== null);
    if (runs.length === 0) return [];
    const rates = runs.map((p) => p.callsPerMinute!);
    const rateList = (from: string) => [...new Set(runs.filter((p) => p.configuredFrom === from).map((p) => fmt(p.configuredPerMinute)))].join(' or ');
    const made = Math.min(...rates) === Math.max(...rates) ? fmt(rates[0]!) : `${fmt(Math.min(...rates))} to ${fmt(Math.max(...rates))}`;
    const recorded = rateList('recorded');
    const assumed = rateList('assumed');
    const against = [recorded && `${recorded} set`, assumed && `${assumed} assumed (--rate) for runs that did not record theirs`].filter(Boolean).join(', ');
    return [`${job} made ${made} calls per minute against ${against}`];
  });
  if (perJob.length === 0) return 'No run made calls enough to measure a pace.';
  return `${perJob.join('; ')}; average latency ${avg(latency)} ms.`;
}

function driftChart(f: ReportFigures): ChartSpec {
  const labels = runLabels(f);
  const runIds = f.nights.map((n) => n.runId);
  const drawn = f.drift.slice(0, DRIFT_LINES);
  return {
    id: 'drift',
    title: 'Answer drift: share of answers where a member was missing, null or of another type',
    alt:
      f.drift.length === 0
        ? "No answer differed from the API's documented interface in these runs."
        : `${plural(f.drift.length, 'member')} drifted; the most: ` +
          drawn.slice(0, 3).map((s) => `${s.operation} ${s.path} ${s.kind} (up to ${Math.max(...s.byRun.map((r) => r.percent))}%)`).join(', ') + '. A step in a line is a change in the service.',
    option: {
      ...base('% of answers', runIds.map((id) => labels.get(id)!)),
      grid: { left: 70, right: 30, top: 40, bottom: 60 },
      series: drawn.map((s) => {
        const byRun = new Map(s.byRun.map((r) => [r.runId, r.percent]));
        return {
          type: 'line',
          name: `${s.operation} ${s.path} (${s.kind})`,
          // A run without an answer of the operation says nothing about its drift: a gap (figures' driftSeries).
          data: runIds.map((id) => byRun.get(id) ?? null),
          connectNulls: false,
          showSymbol: runIds.length <= SYMBOLS_UP_TO,
        };
      }),
    },
  };
}

function forecastChart(f: ReportFigures): ChartSpec {
  const days = [...new Set(f.forecast.days.map((d) => d.day))];
  const jobs = [...new Set(f.forecast.days.map((d) => d.job))].sort();
  // Each job in the colour the credits and pace charts give it; a job that has not run yet takes the next one.
  const coloured = [...new Set([...chartJobs(f), ...jobs])];
  const credits = sum(f.forecast.days.map((d) => d.credits));
  const first = days[0];
  const dueFirst = sum(f.forecast.days.filter((d) => d.day === first).map((d) => d.credits));
  return {
    id: 'forecast',
    title: 'What the next runs will cost: credits of the tasks coming due, by day',
    alt: days.length === 0 ? 'No task comes due in the forecast window.' : `${fmt(credits)} credits come due over ${plural(days.length, 'day')}; ${fmt(dueFirst)} of them on ${first}.`,
    option: {
      ...base('credits', days, 'day (UTC) the tasks come due'),
      series: jobs.map((job) => {
        const byDay = new Map(f.forecast.days.filter((d) => d.job === job).map((d) => [d.day, d.credits]));
        return { type: 'bar', stack: 'due', name: job, data: days.map((d) => byDay.get(d) ?? 0), barMaxWidth: BAR_MAX_PX, itemStyle: { color: colourOfJob(coloured, job) } };
      }),
    },
  };
}

function sum(values: ReadonlyArray<number | null>): number {
  return roundCredits(values.reduce<number>((n, v) => n + (v ?? 0), 0));
}

function avg(values: ReadonlyArray<number | null>): number | null {
  const known = values.filter((v): v is number => v !== null);
  return known.length === 0 ? null : Math.round(known.reduce((n, v) => n + v, 0) / known.length);
}
