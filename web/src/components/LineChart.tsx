import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { seriesColor } from "./UsageChart";

const cssVar = (name: string, fallback: string) =>
  getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;

// A line of a LineChart: its values at the chart's xs (null: a gap), on
// the left axis or the right one.
export interface Line {
  label: string;
  values: (number | null)[];
  color?: string;
  dash?: boolean;
  right?: boolean;
  fill?: boolean;
}

export interface Axis {
  label: string;
  unit: (v: number) => string;
  max?: number; // a fixed top (percent: 100)
}

// LineChart draws lines over time with uPlot: a left axis and, when a
// line asks for it, a right one with its own scale (jobs and minutes on
// one chart).
export function LineChart({ xs, lines, left, right, title, height = 240, testId }: {
  xs: number[]; lines: Line[]; left: Axis; right?: Axis; title: string; height?: number; testId?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const fg = cssVar("--fg", "#1f2328");
    const grid = cssVar("--line", "#d1d9e0");
    const axisStyle = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const range = (a: Axis): uPlot.Scale.Range => (_u, _min, max) => [0, a.max ?? Math.max(1, max * 1.1)];
    const series: uPlot.Series[] = [
      {},
      ...lines.map((l, i) => {
        const color = l.color ?? seriesColor(i);
        const unit = l.right && right ? right.unit : left.unit;
        return {
          label: l.label,
          stroke: color,
          fill: l.fill ? color + "40" : undefined,
          width: l.dash ? 2 : 1.5,
          dash: l.dash ? [6, 4] : undefined,
          scale: l.right ? "right" : "y",
          spanGaps: false,
          points: { show: false },
          value: (_u: uPlot, v: number | null) => (v == null ? "–" : unit(v)),
        };
      }),
    ];
    const axes: uPlot.Axis[] = [axisStyle, { ...axisStyle, label: left.label, size: 56, values: (_u, vs) => vs.map((v) => left.unit(v)) }];
    const scales: uPlot.Scales = { x: { time: true }, y: { range: range(left) } };
    if (right) {
      axes.push({ ...axisStyle, label: right.label, side: 1, scale: "right", size: 56, grid: { show: false }, values: (_u, vs) => vs.map((v) => right.unit(v)) });
      scales.right = { range: range(right) };
    }
    const opts: uPlot.Options = {
      title, width: Math.max(el.clientWidth, 320), height, series, axes, scales,
      legend: { live: true }, cursor: { points: { show: false } },
    };
    const u = new uPlot(opts, [xs, ...lines.map((l) => l.values)] as uPlot.AlignedData, el);
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(el.clientWidth, 320), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
    };
  }, [xs, lines, left, right, title, height]);
  return <div ref={box} className="chart" data-testid={testId} data-series={lines.length} data-points={xs.length} />;
}
