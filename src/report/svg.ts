/**
 * Draws a chart as an SVG string on the server with ECharts' SSR renderer (no DOM, no browser): the page then
 * needs no script to show it. Only the parts the report uses are loaded (bar, line, grid, legend); the text alternative is the page's own (ECharts' aria needs a DOM).
 */
import * as echarts from 'echarts/core';
import { BarChart, LineChart } from 'echarts/charts';
import { GridComponent, LegendComponent } from 'echarts/components';
import { SVGRenderer } from 'echarts/renderers';
import type { ChartSpec } from './charts.ts';

echarts.use([BarChart, LineChart, GridComponent, LegendComponent, SVGRenderer]);

/** The size every chart is drawn at, in CSS pixels (the SVG scales down with the page). */
export const CHART_SIZE = { widthPx: 960, heightPx: 320 } as const;

/** `spec` drawn as SVG markup. */
export function renderChartSvg(spec: ChartSpec): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width: CHART_SIZE.widthPx, height: CHART_SIZE.heightPx });
  try {
    chart.setOption(spec.option);
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}
