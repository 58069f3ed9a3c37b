import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { Stacked } from "../charts";

// A line drawn across the chart at a fixed value: a quota, a budget's pace.
export interface Limit {
  label: string;
  value: number;
  dash?: boolean;
  // values over time, one per bucket (null: unknown), instead of value
  // all along: the cluster's capacity as sampled.
  values?: (number | null)[];
  color?: string;
}

// Series colours: distinguishable in light and dark schemes.
const palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
export const seriesColor = (i: number) => palette[i % palette.length];

const cssVar = (name: string, fallback: string) =>
  getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;

const fmtGPUs = (v: number | null | undefined) => (v == null ? "–" : `${+v.toFixed(2)} GPUs`);

// UsageChart draws stacked GPU usage (charts.ts's stackUsage) with uPlot,
// the largest group lowest, with limits as lines. The legend shows each
// group's own GPUs at the cursor, not the stacked sum.
export function UsageChart({ data, limits, title, height = 300 }: { data: Stacked; limits: Limit[]; title: string; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const fg = cssVar("--fg", "#1f2328");
    const line = cssVar("--line", "#d1d9e0");
    const n = data.groups.length;
    const series: uPlot.Series[] = [
      {},
      ...data.groups.map((g, i) => ({
        label: g,
        stroke: seriesColor(i),
        fill: seriesColor(i) + "b0",
        width: 1,
        points: { show: false },
        value: (_u: uPlot, _v: number | null, _si: number, idx: number | null) => fmtGPUs(idx == null ? null : data.values[i]?.[idx]),
      })),
      ...limits.map((l) => ({
        label: l.label,
        stroke: l.color ?? (l.dash ? cssVar("--warn", "#9a6700") : cssVar("--danger", "#b3261e")),
        width: 2,
        dash: l.dash ? [6, 4] : undefined,
        points: { show: false },
        value: (_u: uPlot, v: number | null) => fmtGPUs(l.values ? v : l.value),
      })),
    ];
    // Each group's layer fills down to the one below it (uPlot's bands:
    // series indexes are 1-based, 0 is the time axis).
    const bands: uPlot.Band[] = [];
    for (let i = 2; i <= n; i++) bands.push({ series: [i, i - 1] });
    const plotData: uPlot.AlignedData = [
      data.xs,
      ...data.stacked,
      ...limits.map((l) => l.values ?? data.xs.map(() => l.value)),
    ];
    const axis = { stroke: fg, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 } };
    const opts: uPlot.Options = {
      title,
      width: Math.max(el.clientWidth, 320),
      height,
      series,
      bands,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [axis, { ...axis, label: "GPUs", size: 50 }],
      legend: { live: true },
      cursor: { points: { show: false } },
    };
    const u = new uPlot(opts, plotData, el);
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(el.clientWidth, 320), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
    };
  }, [data, limits, title, height]);
  // The first limit's latest value, for tests (the capacity at the end).
  const last = limits[0]?.values?.findLast((v) => v != null) ?? limits[0]?.value;
  return <div ref={box} className="chart" data-series={data.groups.length} data-limits={limits.length} data-last-limit={last} />;
}
