import { useCallback, useEffect, useMemo, useState } from "react";
import { useParams } from "react-router";
import { ApiError, paths } from "../api/client";
import type { QueryQueueHistoryResponse, QueryUsageResponse, Tenant } from "../api/types";
import { budgetPace, capacityAt, queueSeries, ranges, stackUsage, stepSeconds, type Range, type Stacked, type Step } from "../charts";
import { LineChart, type Axis, type Line } from "../components/LineChart";
import { seriesColor, UsageChart, type Limit } from "../components/UsageChart";
import { localTime, shortEnum } from "../format";
import { useSession } from "../session";

// How often an open, visible page reads the usage again.
export const refreshMs = 30_000;

// useVisibleInterval calls fn now, every `ms` while the page is visible,
// and at once when it becomes visible again; never while hidden.
function useVisibleInterval(fn: () => void, ms: number) {
  useEffect(() => {
    let timer: ReturnType<typeof setInterval> | undefined;
    const start = () => {
      if (timer !== undefined) return;
      fn();
      timer = setInterval(fn, ms);
    };
    const stop = () => {
      clearInterval(timer);
      timer = undefined;
    };
    const onVisibility = () => (document.visibilityState === "visible" ? start() : stop());
    onVisibility();
    document.addEventListener("visibilitychange", onVisibility);
    return () => {
      stop();
      document.removeEventListener("visibilitychange", onVisibility);
    };
  }, [fn, ms]);
}

interface Query {
  range: Range;
  step: Step;
}

// usePolled reads url (made at each read: the window ends now) again
// every refreshMs while the page is visible.
function usePolled<T>(url: () => string) {
  const { api } = useSession();
  const [state, setState] = useState<{ resp?: T; error?: ApiError; at?: number }>({});
  const read = useMemo(() => {
    let ctl: AbortController | undefined;
    return () => {
      ctl?.abort();
      ctl = new AbortController();
      const signal = ctl.signal;
      api.get<T>(url(), signal).then(
        (resp) => setState({ resp, at: Date.now() }),
        (e: ApiError) => !signal.aborted && setState((s) => ({ ...s, error: e })),
      );
    };
  }, [api, url]);
  useVisibleInterval(read, refreshMs);
  return state;
}

const resource = (parent: string) => `/v1/${parent.split("/").map(encodeURIComponent).join("/")}`;

// windowQuery is the query string of the window that ends now.
function windowQuery(q: Query, extra: Record<string, string>) {
  const end = new Date();
  const start = new Date(end.getTime() - ranges[q.range].seconds * 1000);
  return new URLSearchParams({ start: start.toISOString(), end: end.toISOString(), step: q.step, ...extra });
}

// useUsage reads `parent`'s usage over the range, again every refreshMs
// while the page is visible.
function useUsage(parent: string, q: Query, groupBy: string) {
  const url = useCallback(() => `${resource(parent)}/usage?${windowQuery(q, { groupBy })}`, [parent, q, groupBy]);
  return usePolled<QueryUsageResponse>(url);
}

// useQueueHistory reads `parent`'s queue over the range, likewise.
function useQueueHistory(parent: string, q: Query) {
  const url = useCallback(() => `${resource(parent)}/queueHistory?${windowQuery(q, {})}`, [parent, q]);
  return usePolled<QueryQueueHistoryResponse>(url);
}

// QueueChart draws the jobs waiting (mean and most per bucket, left) and
// the longest wait (right, minutes).
function QueueChart({ resp, q, title, testId }: { resp: QueryQueueHistoryResponse; q: Query; title: string; testId: string }) {
  const series = useMemo(
    () => queueSeries(resp.rows ?? [], resp.start ?? "", resp.end ?? "", stepSeconds((resp.step as Step) || q.step)),
    [resp, q.step],
  );
  const lines = useMemo<Line[]>(() => [
    { label: "Jobs waiting (mean)", values: series.jobsMean, color: seriesColor(0), fill: true },
    { label: "Jobs waiting (most)", values: series.jobsMax, color: seriesColor(0), dash: true },
    { label: "Longest wait (most)", values: series.waitMaxMinutes, color: seriesColor(1), right: true },
  ], [series]);
  const waited = series.jobsMax.some((v) => v > 0);
  return (
    <>
      <LineChart xs={series.xs} lines={lines} left={jobsAxis} right={minutesAxis} title={title} testId={testId} />
      {!waited && <p className="empty">No job waited for admission in this range.</p>}
    </>
  );
}

const jobsAxis: Axis = { label: "jobs waiting", unit: (v) => `${+v.toFixed(1)}` };
const minutesAxis: Axis = { label: "longest wait", unit: (v) => (v >= 120 ? `${+(v / 60).toFixed(1)} h` : `${+v.toFixed(1)} min`) };

function RangePicker({ q, onChange }: { q: Query; onChange: (q: Query) => void }) {
  return (
    <>
      <fieldset className="range" aria-label="Time range">
        {(Object.keys(ranges) as Range[]).map((r) => (
          <label key={r}>
            <input type="radio" name="range" value={r} checked={q.range === r} onChange={() => onChange({ range: r, step: ranges[r].step })} /> {r}
          </label>
        ))}
      </fieldset>
      <label>
        Step{" "}
        <select value={q.step} onChange={(e) => onChange({ ...q, step: e.target.value as Step })}>
          <option value="1h">hourly</option>
          <option value="1d">daily</option>
        </select>
      </label>
    </>
  );
}

// UsagePage shows a tenant's GPUs over time, stacked by creator or by a
// label, against its quota and its budget's pace; for platform admins,
// the cluster's GPUs stacked by tenant below.
export function UsagePage() {
  const { tenant = "" } = useParams();
  const { api } = useSession();
  const [q, setQ] = useState<Query>({ range: "7d", step: "1h" });
  const [by, setBy] = useState<"creator" | "label">("creator");
  const [labelKey, setLabelKey] = useState("team");
  const [key, setKey] = useState("team"); // the label key as applied
  const groupBy = by === "creator" ? "creator" : `label:${key}`;
  const [t, setTenant] = useState<Tenant>();
  useEffect(() => {
    const ctl = new AbortController();
    api.get<Tenant>(paths.tenant(tenant), ctl.signal).then(setTenant, () => undefined);
    return () => ctl.abort();
  }, [api, tenant]);

  const usage = useUsage(`tenants/${tenant}`, q, groupBy);
  const queue = useQueueHistory(`tenants/${tenant}`, q);
  const stacked = useMemo(
    () => usage.resp && stackUsage(usage.resp.rows ?? [], usage.resp.start ?? "", usage.resp.end ?? "", (usage.resp.step as Step) || q.step, usage.resp.groupBy ?? "", usage.at),
    [usage.resp, usage.at, q.step],
  );
  const limits = useMemo(() => {
    const out: Limit[] = [];
    if (t?.quota?.gpu) out.push({ label: "Quota", value: t.quota.gpu });
    const pace = budgetPace(t?.sharing?.budget, new Date());
    if (pace !== undefined) out.push({ label: "Budget pace", value: pace, dash: true });
    return out;
  }, [t]);
  const budget = t?.sharing?.budget;
  const bs = t?.sharingStatus;

  return (
    <>
      <div className="page-head">
        <h1>Usage of {tenant}</h1>
      </div>
      <form className="chart-controls" onSubmit={(e) => { e.preventDefault(); setKey(labelKey.trim() || "team"); }}>
        <RangePicker q={q} onChange={setQ} />
        <label>
          Stack by{" "}
          <select value={by} onChange={(e) => setBy(e.target.value as "creator" | "label")} data-testid="stack-by">
            <option value="creator">creator</option>
            <option value="label">label</option>
          </select>
        </label>
        {by === "label" && (
          <label>
            Label key <input value={labelKey} onChange={(e) => setLabelKey(e.target.value)} onBlur={() => setKey(labelKey.trim() || "team")} size={12} />
          </label>
        )}
      </form>
      {usage.error && <p role="alert" className="error">{usage.error.message}</p>}
      {!stacked ? (
        <p aria-live="polite">Loading…</p>
      ) : (
        <section aria-labelledby="tenant-usage-title" className="usage" data-testid="tenant-usage">
          <h2 id="tenant-usage-title" className="sr-only">GPUs of {tenant}</h2>
          <UsageChart data={stacked} limits={limits} title={`GPUs held by ${tenant}, by ${by === "creator" ? "creator" : key} (${q.step === "1d" ? "daily" : "hourly"} average)`} />
          <Totals data={stacked} />
          <p className="sub">
            {t?.quota?.gpu ? `Quota ${t.quota.gpu} GPUs. ` : "No GPU quota. "}
            {budget?.gpuHours
              ? `Budget ${budget.gpuHours} GPU-hours per ${shortEnum(budget.period, "BUDGET_PERIOD_").toLowerCase().replace("rolling_30d", "30 days") || "month"}` +
                (bs?.budgetUsedGpuHours !== undefined ? `: ${+bs.budgetUsedGpuHours.toFixed(1)} used` : "") +
                (bs?.budgetResetTime ? `, resets ${localTime(bs.budgetResetTime)}` : "") + ". The dashed line is its pace: the GPUs that use it up evenly."
              : "No GPU-hour budget."}{" "}
            Updated {usage.at ? localTime(new Date(usage.at).toISOString()) : ""}; refreshed every 30 s while open.
          </p>
        </section>
      )}
      <section aria-labelledby="tenant-queue-title" className="usage" data-testid="tenant-queue">
        <h2 id="tenant-queue-title">Queue</h2>
        {queue.error && <p role="alert" className="error">{queue.error.message}</p>}
        {queue.resp ? (
          <QueueChart resp={queue.resp} q={q} title={`Jobs of ${tenant} waiting for admission, and the longest wait`} testId="tenant-queue-chart" />
        ) : !queue.error && <p aria-live="polite">Loading…</p>}
      </section>
      <ClusterUsage q={q} />
    </>
  );
}

// Totals lists each group's GPU-hours in the range and, once any are
// known (the server's --prometheus-url), those held idle: for platform
// admins, every tenant's (the report of idle GPUs).
function Totals({ data: { groups, totals, idle } }: { data: Stacked }) {
  if (groups.length === 0) return <p className="empty">No GPU usage in this range.</p>;
  const withIdle = idle.some((v) => v > 0);
  const hours = (v: number | undefined) => +(v ?? 0).toFixed(2);
  return (
    <table className="usage-totals">
      <caption>GPU-hours in the range{withIdle && ", and those held idle (jobs flagged IdleGPUs)"}</caption>
      {withIdle && (
        <thead>
          <tr><td /><th scope="col">held</th><th scope="col">idle</th></tr>
        </thead>
      )}
      <tbody>
        {groups.map((g, i) => (
          <tr key={g}>
            <th scope="row"><span className="swatch" style={{ background: seriesColor(i) }} /> {g}</th>
            <td>{hours(totals[i])}</td>
            {withIdle && <td>{hours(idle[i])}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// ClusterUsage is every tenant's GPUs stacked by tenant (tenants/-)
// against the cluster's GPU capacity as the scheduler sampled it, and
// every tenant's queue, for platform admins; hidden for everyone else.
function ClusterUsage({ q }: { q: Query }) {
  const usage = useUsage("tenants/-", q, "");
  const queue = useQueueHistory("tenants/-", q);
  const stacked = useMemo(
    () => usage.resp && stackUsage(usage.resp.rows ?? [], usage.resp.start ?? "", usage.resp.end ?? "", (usage.resp.step as Step) || q.step, "", usage.at),
    [usage.resp, usage.at, q.step],
  );
  const capacity = useMemo<Limit[]>(() => {
    const points = queue.resp?.capacity ?? [];
    if (!stacked || points.length === 0) return [];
    return [{ label: "Capacity", value: 0, values: capacityAt(points, stacked.xs), color: cssColor("--fg", "#1f2328") }];
  }, [queue.resp, stacked]);
  // Not a platform admin: nothing to show (the mark is for tests).
  if (usage.error?.status === 403 || usage.error?.status === 401) return <span hidden data-cluster="forbidden" />;
  if (!stacked && !usage.error) return null;
  return (
    <section aria-labelledby="cluster-usage-title" className="usage" data-testid="cluster-usage">
      <h2 id="cluster-usage-title">Cluster</h2>
      {usage.error && <p role="alert" className="error">{usage.error.message}</p>}
      {stacked && (
        <>
          <UsageChart data={stacked} limits={capacity} title="GPUs held, by tenant, against the cluster's GPUs" />
          <Totals data={stacked} />
          <p className="sub">Capacity: the GPUs of the nodes that take new pods, as the scheduler sampled them each minute ({q.step === "1d" ? "the day's" : "the hour's"} most).</p>
        </>
      )}
      {queue.resp && <QueueChart resp={queue.resp} q={q} title="Jobs of every tenant waiting for admission, and the longest wait" testId="cluster-queue-chart" />}
    </section>
  );
}

const cssColor = (name: string, fallback: string) =>
  getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
