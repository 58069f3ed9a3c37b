// Data shaping for the console's charts: usage rows (UsageService) into
// stacked series, and a job's events into a timeline. Pure functions, so
// that vitest checks them without a browser; the pages draw the result
// (uPlot for usage, CSS for the timeline).
import type { Budget, CapacityPoint, JobEvent, JobState, QueueHistoryRow, UsageRow, UtilizationSeries } from "./api/types";
import { finalStates, stateName } from "./format";

// The time ranges the usage page offers, and the step each defaults to.
export const ranges = {
  "24h": { seconds: 24 * 3600, step: "1h" },
  "7d": { seconds: 7 * 24 * 3600, step: "1h" },
  "30d": { seconds: 30 * 24 * 3600, step: "1d" },
} as const;
export type Range = keyof typeof ranges;
export type Step = "1h" | "1d";
export const stepSeconds = (s: Step) => (s === "1d" ? 86400 : 3600);

// groupKey names the series a row belongs to: its creator, its value of
// a label ("label:team"), or, without a grouping, its tenant.
export function groupKey(row: UsageRow, groupBy: string): string {
  if (groupBy === "creator") return row.creator || "(no creator)";
  if (groupBy.startsWith("label:")) {
    const k = groupBy.slice("label:".length);
    return row.labels?.[k] || `(no ${k})`;
  }
  return row.tenant || "(no tenant)";
}

export interface Stacked {
  // Bucket starts, in Unix seconds: every bucket of the window, those
  // without usage included (the API leaves them out).
  xs: number[];
  // The series, largest total first.
  groups: string[];
  // values[g][i]: the GPUs group g held on average over bucket i
  // (GPU-hours over the bucket's hours).
  values: number[][];
  // stacked[g][i]: values of groups 0 to g summed: the top edge of
  // group g's layer in a stacked area chart, the largest group lowest
  // (stacked[groups.length - 1] is the total).
  stacked: number[][];
  // GPU-hours of each group over the window.
  totals: number[];
  // Of them, the GPU-hours held idle: while a job was flagged IdleGPUs
  // (known with the server's --prometheus-url only).
  idle: number[];
}

// stackUsage turns the rows of one query (start and end as the answer
// gives them, already rounded to the step) into stacked series of
// average GPUs per bucket, largest group first. The bucket under way at
// `now` (ms) counts the ledger's open spans up to now only, so it is
// averaged over its elapsed part (at least a minute), not its width.
export function stackUsage(rows: UsageRow[], start: string, end: string, step: Step, groupBy: string, now = Infinity): Stacked {
  const width = stepSeconds(step);
  const from = Math.floor(Date.parse(start) / 1000);
  const to = Math.floor(Date.parse(end) / 1000);
  const xs: number[] = [];
  for (let t = from; t < to; t += width) xs.push(t);
  const index = new Map(xs.map((t, i) => [t, i]));
  const byGroup = new Map<string, number[]>();
  for (const r of rows) {
    const i = index.get(Math.floor(Date.parse(r.start ?? "") / 1000));
    if (i === undefined) continue;
    const k = groupKey(r, groupBy);
    let v = byGroup.get(k);
    if (!v) byGroup.set(k, (v = new Array<number>(xs.length).fill(0)));
    const t = xs[i] ?? 0;
    const elapsed = now / 1000 < t + width ? Math.min(width, Math.max(60, now / 1000 - t)) : width;
    v[i] = (v[i] ?? 0) + ((r.gpuHours ?? 0) * 3600) / elapsed;
  }
  const totals = new Map<string, number>();
  const idle = new Map<string, number>();
  for (const r of rows) {
    if (!index.has(Math.floor(Date.parse(r.start ?? "") / 1000))) continue;
    const k = groupKey(r, groupBy);
    totals.set(k, (totals.get(k) ?? 0) + (r.gpuHours ?? 0));
    idle.set(k, (idle.get(k) ?? 0) + (r.gpuHoursIdle ?? 0));
  }
  const entries = [...byGroup.entries()].map(([g, v]) => ({ g, v, total: totals.get(g) ?? 0 }));
  entries.sort((a, b) => b.total - a.total || a.g.localeCompare(b.g));
  const values = entries.map((e) => e.v);
  const stacked = values.map((_, g) => xs.map((_, i) => values.slice(0, g + 1).reduce((s, v) => s + (v[i] ?? 0), 0)));
  return { xs, groups: entries.map((e) => e.g), values, stacked, totals: entries.map((e) => e.total), idle: entries.map((e) => idle.get(e.g) ?? 0) };
}

// budgetPace is the GPUs a tenant may hold all period long and stay
// within its GPU-hour budget (undefined without a budget): the budget
// over the period's hours (the calendar month `at` falls in, or 30 days).
export function budgetPace(b: Budget | undefined, at: Date): number | undefined {
  if (!b?.gpuHours) return undefined;
  let hours = 30 * 24;
  if (b.period !== "BUDGET_PERIOD_ROLLING_30D") {
    const days = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 0)).getUTCDate();
    hours = days * 24;
  }
  return b.gpuHours / hours;
}

// A stretch of a job's life in one state.
export interface Segment {
  state: string; // QUEUED, RUNNING, ... as stateName gives it
  start: number; // ms
  end: number; // ms; the next segment's start, or now while the job lives
}

// A moment worth a mark on the timeline: admission, a restart, a
// preemption, a suspension, the end.
export interface Marker {
  time: number; // ms
  kind: "admitted" | "restart" | "preempted" | "suspended" | "resumed" | "end" | "warning";
  reason: string;
  message: string;
}

// The event reasons that mark the timeline (internal/job's Reason*).
const markerKinds: Record<string, Marker["kind"]> = {
  Admitted: "admitted",
  Restarting: "restart",
  Preempted: "preempted",
  Preempting: "preempted",
  Requeued: "preempted",
  Suspended: "suspended",
  Resumed: "resumed",
};

export interface Timeline {
  segments: Segment[];
  markers: Marker[];
  start: number;
  end: number;
}

// jobTimeline draws a job's life from its events (oldest first, as the
// events API lists them): a segment each time the state changes, ending
// at the next change, or at `now` while the job is not final; and a
// marker for each admission, restart, preemption, suspension and the end.
export function jobTimeline(events: JobEvent[], now: number): Timeline {
  const segments: Segment[] = [];
  const markers: Marker[] = [];
  let final = false;
  for (const e of events) {
    const t = Date.parse(e.createTime ?? "");
    if (Number.isNaN(t)) continue;
    const reason = e.reason ?? "";
    const kind = markerKinds[reason];
    if (e.state && !final) {
      const s = stateName(e.state);
      const last = segments[segments.length - 1];
      if (!last || last.state !== s) {
        if (last) last.end = t;
        segments.push({ state: s, start: t, end: t });
        if (finalStates.includes(e.state as JobState)) {
          final = true;
          markers.push({ time: t, kind: "end", reason: reason || s, message: e.message ?? "" });
          continue;
        }
      }
    }
    if (kind) markers.push({ time: t, kind, reason, message: e.message ?? "" });
    else if (e.type === "Warning") markers.push({ time: t, kind: "warning", reason, message: e.message ?? "" });
  }
  const last = segments[segments.length - 1];
  if (last && !final) last.end = Math.max(last.start, now);
  const start = segments[0]?.start ?? now;
  const end = last ? last.end : now;
  return { segments, markers, start, end };
}

// The queue over time (UsageService.QueryQueueHistory), one value per
// bucket of the window: rows of several tenants are summed (jobs) or
// maxed (the oldest wait); a bucket without rows had nothing waiting.
export interface QueueSeries {
  xs: number[]; // bucket starts, Unix seconds
  jobsMean: number[]; // jobs waiting, mean over the bucket's samples
  jobsMax: number[]; // jobs waiting at most (per tenant, summed)
  waitMaxMinutes: number[]; // the longest wait, minutes
  waitMeanMinutes: number[]; // the longest wait's mean over the bucket, minutes (max over tenants)
}

export function queueSeries(rows: QueueHistoryRow[], start: string, end: string, stepSeconds: number): QueueSeries {
  const from = Math.floor(Date.parse(start) / 1000);
  const to = Math.floor(Date.parse(end) / 1000);
  const xs: number[] = [];
  for (let t = from; t < to; t += stepSeconds) xs.push(t);
  const index = new Map(xs.map((t, i) => [t, i]));
  const zero = () => xs.map(() => 0);
  const out: QueueSeries = { xs, jobsMean: zero(), jobsMax: zero(), waitMaxMinutes: zero(), waitMeanMinutes: zero() };
  for (const r of rows) {
    const i = index.get(Math.floor(Date.parse(r.start ?? "") / 1000));
    if (i === undefined) continue;
    out.jobsMean[i] = (out.jobsMean[i] ?? 0) + (r.pendingJobsMean ?? 0);
    out.jobsMax[i] = (out.jobsMax[i] ?? 0) + (r.pendingJobsMax ?? 0);
    out.waitMaxMinutes[i] = Math.max(out.waitMaxMinutes[i] ?? 0, (r.oldestWaitSecondsMax ?? 0) / 60);
    out.waitMeanMinutes[i] = Math.max(out.waitMeanMinutes[i] ?? 0, (r.oldestWaitSecondsMean ?? 0) / 60);
  }
  return out;
}

// capacityAt lays the cluster's capacity samples on the buckets xs (Unix
// seconds): null where no sample fell (no leader, or before sampling
// began), so the line has a gap rather than a false zero.
export function capacityAt(points: CapacityPoint[], xs: number[]): (number | null)[] {
  const by = new Map(points.map((p) => [Math.floor(Date.parse(p.start ?? "") / 1000), Number(p.gpus ?? 0)]));
  return xs.map((x) => by.get(x) ?? null);
}

// Utilization is a job's GPU utilisation series aligned for one chart:
// the union of their times, and each series' value at each (null where
// it has none).
export interface Utilization {
  xs: number[]; // Unix seconds
  labels: string[]; // replica, and the GPU when a replica has several
  values: (number | null)[][];
}

export function utilizationSeries(series: UtilizationSeries[]): Utilization {
  const times = new Set<number>();
  for (const s of series) for (const p of s.points ?? []) times.add(Math.floor(Date.parse(p.time ?? "") / 1000));
  const xs = [...times].filter((t) => !Number.isNaN(t)).sort((a, b) => a - b);
  const index = new Map(xs.map((t, i) => [t, i]));
  const perReplica = new Map<string, number>();
  for (const s of series) perReplica.set(s.replica ?? "", (perReplica.get(s.replica ?? "") ?? 0) + 1);
  const labels: string[] = [];
  const values: (number | null)[][] = [];
  for (const s of series) {
    const replica = s.replica ?? "";
    labels.push((perReplica.get(replica) ?? 0) > 1 ? `${replica} ${shortGPU(s.gpu ?? "")}` : replica);
    const v: (number | null)[] = xs.map(() => null);
    for (const p of s.points ?? []) {
      const i = index.get(Math.floor(Date.parse(p.time ?? "") / 1000));
      if (i !== undefined) v[i] = p.utilization ?? 0;
    }
    values.push(v);
  }
  return { xs, labels, values };
}

// shortGPU shortens a DCGM UUID (GPU-8c6b…) to its first group.
const shortGPU = (g: string) => (g.startsWith("GPU-") ? g.slice(0, 12) : g);
