import { useEffect, useState } from "react";
import { Link } from "react-router";
import { paths } from "../api/client";
import type { Job } from "../api/types";
import { dependencyGraph } from "../graph";
import { displayState } from "../format";
import { useSession } from "../session";

const W = 150, H = 34, GX = 60, GY = 16;

// DependencyGraph draws the chain a job belongs to (spec.dependsOn): its
// dependencies and dependents among the tenant's newest 1,000 jobs, one
// read, refreshed when the job's state changes. Nothing when the job is on
// its own.
export function DependencyGraph({ tenant, job, state }: { tenant: string; job: string; state?: string }) {
  const { api } = useSession();
  const [jobs, setJobs] = useState<Job[]>([]);
  useEffect(() => {
    const ctl = new AbortController();
    api.get<{ jobs?: Job[] }>(`${paths.jobs(tenant)}?pageSize=1000`, ctl.signal).then((r) => setJobs(r.jobs ?? []), () => undefined);
    return () => ctl.abort();
  }, [api, tenant, state]);
  const g = dependencyGraph(job, jobs);
  if (g.nodes.length === 0) return null;
  const at = new Map(g.nodes.map((n) => [n.id, n]));
  const width = (Math.max(...g.nodes.map((n) => n.col)) + 1) * (W + GX) - GX;
  const height = (Math.max(...g.nodes.map((n) => n.row)) + 1) * (H + GY) - GY;
  const x = (c: number) => c * (W + GX), y = (r: number) => r * (H + GY);
  return (
    <section aria-labelledby="chain-title">
      <h2 id="chain-title">Pipeline</h2>
      <svg className="chain" width={width + 2} height={height + 2} role="img" aria-label={`The jobs ${job} depends on and that depend on it`}>
        <defs>
          <marker id="chain-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" />
          </marker>
        </defs>
        {g.edges.map((e) => {
          const a = at.get(e.from)!, b = at.get(e.to)!;
          const x1 = x(a.col) + W, y1 = y(a.row) + H / 2, x2 = x(b.col), y2 = y(b.row) + H / 2;
          return (
            <g key={`${e.from}>${e.to}`} className="chain-edge">
              <path d={`M ${x1} ${y1} C ${x1 + GX / 2} ${y1}, ${x2 - GX / 2} ${y2}, ${x2} ${y2}`} markerEnd="url(#chain-arrow)" />
              {e.condition !== "SUCCEEDED" && <text x={(x1 + x2) / 2} y={(y1 + y2) / 2 - 4} textAnchor="middle">{e.condition.toLowerCase()}</text>}
            </g>
          );
        })}
        {g.nodes.map((n) => {
          const state = n.job ? displayState(n.job) : "GONE";
          const box = (
            <g transform={`translate(${x(n.col) + 1},${y(n.row) + 1})`} className={`chain-node${n.id === job ? " chain-self" : ""}`} data-job={n.id}>
              <rect width={W} height={H} rx="4" />
              <text x="8" y="14">{n.id.length > 20 ? `${n.id.slice(0, 19)}…` : n.id}</text>
              <text x="8" y="28" className={`state state-${state.toLowerCase()}`}>{state}</text>
            </g>
          );
          return n.job && n.id !== job ? <Link key={n.id} to={`/tenants/${tenant}/jobs/${n.id}`}>{box}</Link> : <g key={n.id}>{box}</g>;
        })}
      </svg>
    </section>
  );
}
