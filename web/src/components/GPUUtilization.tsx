import { useEffect, useMemo, useState } from "react";
import { paths } from "../api/client";
import type { GPUUtilization as Figures, QueryJobUtilizationResponse, ReplicaStatus } from "../api/types";
import { utilizationSeries } from "../charts";
import { replicaTypeName } from "../format";
import { useSession } from "../session";
import { LineChart, type Axis, type Line } from "./LineChart";

// How often a running job's chart reads Prometheus again.
const refreshMs = 30_000;

const percentAxis: Axis = { label: "GPU utilisation", unit: (v) => `${+v.toFixed(0)}%`, max: 100 };
const pct = (v?: number) => (v === undefined ? "–" : `${+v.toFixed(1)}%`);
const mib = (v?: number) => (v === undefined ? "–" : `${Math.round(v)} MiB`);

// GPUUtilization is a job's GPU utilisation per replica over its life,
// from Prometheus through the API (UsageService.QueryJobUtilization), read
// again every 30 s while the job runs and the page is visible; below it,
// the mean and p95 Trainyard kept with the job, which outlive
// Prometheus's retention (and stand alone when it has forgotten).
export function GPUUtilization({ job, running, kept, replicas }: { job: string; running: boolean; kept?: Figures; replicas: ReplicaStatus[] }) {
  const { api } = useSession();
  const [resp, setResp] = useState<QueryJobUtilizationResponse>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    const ctl = new AbortController();
    const read = () => {
      if (document.visibilityState !== "visible") return;
      api.get<QueryJobUtilizationResponse>(`${paths.job(job)}/utilization`, ctl.signal).then(
        (r) => { setResp(r); setError(undefined); },
        (e: Error) => !ctl.signal.aborted && setError(e.message),
      );
    };
    read();
    const timer = running ? setInterval(read, refreshMs) : undefined;
    document.addEventListener("visibilitychange", read);
    return () => {
      ctl.abort();
      clearInterval(timer);
      document.removeEventListener("visibilitychange", read);
    };
  }, [api, job, running]);
  const u = useMemo(() => utilizationSeries(resp?.series ?? []), [resp]);
  const lines = useMemo<Line[]>(() => u.labels.map((label, i) => ({ label, values: u.values[i] ?? [] })), [u]);
  const measured = replicas.filter((r) => r.gpuUtilization);
  return (
    <section aria-labelledby="gpu-title" data-testid="gpu-utilization">
      <h2 id="gpu-title">GPU utilisation</h2>
      {error && <p role="alert" className="error">{error}</p>}
      {u.xs.length > 0 ? (
        <LineChart xs={u.xs} lines={lines} left={percentAxis} title={`Per replica, every ${resp?.stepSeconds ?? 0} s (DCGM through Prometheus)`} testId="gpu-chart" />
      ) : (
        resp && (
          <p className="sub" data-testid="gpu-no-series">
            {resp.available ? "Prometheus has no samples of this job's GPUs (not yet, or no longer: past its retention)" : "The server reads no Prometheus (--prometheus-url)"}
            {kept || measured.length > 0 ? ": the figures Trainyard kept are below." : "."}
          </p>
        )
      )}
      {(kept || measured.length > 0) && <table className="gpu-figures">
        <caption>Kept with the job: mean and p95 over its life</caption>
        <thead><tr><th scope="col">Replica</th><th scope="col">GPUs</th><th scope="col">Mean</th><th scope="col">p95</th><th scope="col">Memory (mean / most)</th></tr></thead>
        <tbody>
          {measured.map((r) => {
            const f = r.gpuUtilization as Figures;
            const id = `${replicaTypeName(r.type)}-${r.index ?? 0}`;
            return (
              <tr key={id} data-gpu-replica={id}>
                <th scope="row">{id}</th><td>{f.gpus ?? 0}</td><td>{pct(f.meanPercent)}</td><td>{pct(f.p95Percent)}</td><td>{mib(f.meanMemoryMib)} / {mib(f.maxMemoryMib)}</td>
              </tr>
            );
          })}
          {kept && (
            <tr data-gpu-replica="job">
              <th scope="row">the job</th><td>{kept.gpus ?? 0}</td><td>{pct(kept.meanPercent)}</td><td>{pct(kept.p95Percent)}</td><td>{mib(kept.meanMemoryMib)} / {mib(kept.maxMemoryMib)}</td>
            </tr>
          )}
        </tbody>
      </table>}
    </section>
  );
}
