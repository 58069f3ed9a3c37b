import { useCallback, useEffect, useMemo, useState, type FormEvent } from "react";
import { Link, useParams, useSearchParams } from "react-router";
import { ApiError, paths } from "../api/client";
import type { Job, WatchJobResponse } from "../api/types";
import { Confirm } from "../components/Confirm";
import { useNow } from "../components/useNow";
import { filterExpr, matches, type JobFilter } from "../filter";
import { age, displayState, gpus, isFinal, jobDuration, localTime, replicasReady, waitingFor } from "../format";
import { freshest, newer, useJobWatch } from "../live";
import { useSession } from "../session";

const pageSize = 50;
const states = ["QUEUED", "STARTING", "RUNNING", "RESTARTING", "SUCCEEDED", "FAILED", "CANCELLED", "SUSPENDED"];

type SortKey = "age" | "name" | "state" | "priority" | "gpus" | "creator" | "queue" | "cluster";
const sorters: Record<SortKey, (a: Job, b: Job) => number> = {
  age: (a, b) => (b.createTime ?? "").localeCompare(a.createTime ?? ""),
  name: (a, b) => a.name.localeCompare(b.name),
  state: (a, b) => displayState(a).localeCompare(displayState(b)),
  priority: (a, b) => (b.spec?.priority ?? 0) - (a.spec?.priority ?? 0),
  gpus: (a, b) => gpus(b) - gpus(a),
  creator: (a, b) => (a.creator ?? "").localeCompare(b.creator ?? ""),
  queue: (a, b) => (a.status?.queue?.tenantPosition ?? 1e9) - (b.status?.queue?.tenantPosition ?? 1e9),
  cluster: (a, b) => (a.status?.cluster ?? "").localeCompare(b.status?.cluster ?? ""),
};

export const jobId = (name: string) => name.split("/").pop() ?? name;

// JobsPage lists a tenant's jobs, newest first, a page at a time (keyset
// page tokens), and keeps the rows live from the tenant's watch.
export function JobsPage() {
  const { tenant = "" } = useParams();
  const { api } = useSession();
  const [params, setParams] = useSearchParams();
  const filter: JobFilter = { state: params.get("state") ?? "", labels: params.get("labels") ?? "", creator: params.get("creator") ?? "" };
  const expr = filterExpr(filter);
  const [tokens, setTokens] = useState<string[]>([""]); // page tokens of the pages seen, the current last
  const [jobs, setJobs] = useState<Job[]>();
  const [next, setNext] = useState("");
  // The first list's watchAfterEventId, by tenant: the watch starts there.
  const [watchFrom, setWatchFrom] = useState<{ tenant: string; after: string }>();
  const [error, setError] = useState<string>();
  // The last list failed for a reason that may pass (the API or its
  // database restarting): read it again shortly.
  const [transient, setTransient] = useState(false);
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: "age", desc: false });
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [confirm, setConfirm] = useState<"cancel" | "delete">();
  const [results, setResults] = useState<string[]>([]);
  const now = useNow();
  const token = tokens[tokens.length - 1] ?? "";
  const firstPage = tokens.length === 1;

  const load = useCallback(() => {
    const q = new URLSearchParams({ pageSize: String(pageSize) });
    if (expr) q.set("filter", expr);
    if (token) q.set("pageToken", token);
    api.get<{ jobs?: Job[]; nextPageToken?: string; watchAfterEventId?: string }>(`${paths.jobs(tenant)}?${q}`).then(
      (r) => {
        setJobs((shown) => freshest(r.jobs ?? [], shown));
        setNext(r.nextPageToken ?? "");
        setWatchFrom((w) => (w?.tenant === tenant ? w : { tenant, after: r.watchAfterEventId ?? "0" }));
        setError(undefined);
        setTransient(false);
      },
      (e: Error) => {
        setError(e.message);
        setTransient(!(e instanceof ApiError) || e.status >= 500);
      },
    );
  }, [api, tenant, expr, token]);

  useEffect(load, [load]);
  // Until a list arrives nothing is shown, and until one gives a position
  // no watch runs (the first list, or the one after the position expired):
  // retry a list that failed for a passing reason, so the page comes up by
  // itself once the API answers.
  const watching = watchFrom?.tenant === tenant;
  useEffect(() => {
    if ((jobs && watching) || !transient) return;
    const t = window.setInterval(load, 5_000);
    return () => window.clearInterval(t);
  }, [jobs, watching, transient, load]);
  useEffect(() => {
    setTokens([""]);
    setSelected(new Set());
  }, [tenant, expr]);

  const onMessage = useCallback(
    (m: WatchJobResponse) => {
      const j = m.job;
      if (!j?.name) return;
      setJobs((list) => {
        if (!list) return list;
        const i = list.findIndex((x) => x.name === j.name);
        if (m.event?.reason === "Deleted" || !matches(filter, j)) return i < 0 ? list : list.filter((_, k) => k !== i);
        if (i >= 0) {
          // A watch message may carry an older read than the list had.
          const shown = list[i];
          if (shown && newer(shown, j)) return list;
          return list.map((x, k) => (k === i ? j : x));
        }
        // New jobs belong on the first page only (newest first).
        return firstPage ? [j, ...list] : list;
      });
    },
    // filter is rebuilt each render from the URL; expr stands for it.
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [expr, firstPage],
  );
  // The watch's position expired: list again, and watch from that list.
  const relist = useCallback(() => {
    setWatchFrom(undefined);
    load();
  }, [load]);
  useJobWatch(api, tenant, watching ? watchFrom.after : undefined, onMessage, relist);

  // Queue positions and start estimates change with every scheduling
  // cycle, without an event: re-read the page now and then while it shows
  // queued jobs.
  const anyQueued = (jobs ?? []).some((j) => j.status?.state === "JOB_STATE_QUEUED");
  useEffect(() => {
    if (!anyQueued) return;
    const t = window.setInterval(load, 10_000);
    return () => window.clearInterval(t);
  }, [anyQueued, load]);

  const rows = useMemo(() => {
    const list = [...(jobs ?? [])].sort(sorters[sort.key]);
    return sort.desc ? list.reverse() : list;
  }, [jobs, sort]);

  function applyFilter(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const q = new URLSearchParams();
    for (const k of ["state", "labels", "creator"]) {
      const v = String(data.get(k) ?? "").trim();
      if (v) q.set(k, v);
    }
    setParams(q);
  }

  async function act(kind: "cancel" | "delete") {
    setConfirm(undefined);
    const out: string[] = [];
    for (const name of selected) {
      try {
        if (kind === "cancel") await api.call("POST", `${paths.job(name)}:cancel`, {});
        else await api.call("DELETE", paths.job(name));
        out.push(`${jobId(name)}: ${kind === "cancel" ? "cancel requested" : "deleted"}`);
      } catch (e) {
        out.push(`${jobId(name)}: ${(e as Error).message}`);
      }
    }
    setResults(out);
    setSelected(new Set());
    load();
  }

  const sortButton = (key: SortKey, label: string) => (
    <th scope="col" aria-sort={sort.key === key ? (sort.desc ? "descending" : "ascending") : "none"}>
      <button type="button" className="sort" onClick={() => setSort((s) => ({ key, desc: s.key === key ? !s.desc : false }))}>
        {label}
      </button>
    </th>
  );
  const toggle = (name: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(name)) n.delete(name);
      else n.add(name);
      return n;
    });
  const allSelected = rows.length > 0 && rows.every((j) => selected.has(j.name));

  return (
    <>
      <div className="page-head">
        <h1>Jobs in {tenant}</h1>
        <Link className="button primary" to={`/tenants/${tenant}/submit`}>Submit a job</Link>
      </div>
      <form className="filters" onSubmit={applyFilter} aria-label="Filter jobs" key={params.toString()}>
        <label>
          State
          <select name="state" defaultValue={filter.state}>
            <option value="">any</option>
            {states.map((s) => <option key={s} value={s}>{s.toLowerCase()}</option>)}
          </select>
        </label>
        <label>
          Labels
          <input name="labels" defaultValue={filter.labels} placeholder="team=nlp, sweep" />
        </label>
        <label>
          Creator
          <input name="creator" defaultValue={filter.creator} placeholder="alice@example.com" />
        </label>
        <button type="submit">Filter</button>
      </form>
      <div className="bulk" role="group" aria-label="Selected jobs">
        <span>{selected.size} selected</span>
        <button type="button" disabled={selected.size === 0} onClick={() => setConfirm("cancel")}>Cancel…</button>
        <button type="button" disabled={selected.size === 0} onClick={() => setConfirm("delete")} className="danger">Delete…</button>
      </div>
      {results.length > 0 && (
        <ul className="results" aria-live="polite">{results.map((r) => <li key={r}>{r}</li>)}</ul>
      )}
      {error && <p role="alert" className="error">{error}</p>}
      {!jobs && !error && <p aria-live="polite">Loading…</p>}
      {jobs && (
        <table className="jobs">
          <caption className="sr-only">Jobs, live</caption>
          <thead>
            <tr>
              <th scope="col">
                <input
                  type="checkbox"
                  aria-label="Select all jobs on this page"
                  checked={allSelected}
                  onChange={() => setSelected(allSelected ? new Set() : new Set(rows.map((j) => j.name)))}
                />
              </th>
              {sortButton("name", "Job")}
              {sortButton("state", "State")}
              <th scope="col">Replicas</th>
              {sortButton("gpus", "GPUs")}
              {sortButton("priority", "Priority")}
              {sortButton("queue", "Queue")}
              {sortButton("cluster", "Cluster")}
              {sortButton("creator", "Creator")}
              {sortButton("age", "Age")}
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {rows.length === 0 && (
              <tr><td colSpan={11} className="empty">No jobs{expr ? " match this filter" : " yet"}.</td></tr>
            )}
            {rows.map((j) => {
              const id = jobId(j.name);
              const r = replicasReady(j);
              const q = j.status?.queue;
              return (
                <tr key={j.name} data-job={id}>
                  <td>
                    <input type="checkbox" aria-label={`Select ${id}`} checked={selected.has(j.name)} onChange={() => toggle(j.name)} />
                  </td>
                  <th scope="row">
                    <Link to={`/tenants/${tenant}/jobs/${id}`}>{id}</Link>
                    {j.displayName && <div className="sub">{j.displayName}</div>}
                  </th>
                  <td><span className={`state state-${displayState(j).toLowerCase()}`} data-testid="state">{displayState(j)}</span></td>
                  <td>{r.ready}/{r.total}</td>
                  <td>{gpus(j) || ""}</td>
                  <td>{j.spec?.priority ?? 0}</td>
                  <td title={q?.message}>
                    {q?.tenantPosition ? `#${q.tenantPosition}` : ""}
                    {q?.clusterPosition ? ` (#${q.clusterPosition} overall)` : ""}
                    <div className="sub">{waitingFor(j)}</div>
                    {q?.estimatedStartTime && <div className="sub">starts ~{localTime(q.estimatedStartTime)}</div>}
                  </td>
                  <td data-testid="cluster">{j.status?.cluster ?? ""}</td>
                  <td>{j.creator}</td>
                  <td><time dateTime={j.createTime} title={localTime(j.createTime)}>{age(j.createTime, now)}</time></td>
                  <td>{jobDuration(j, now)}{!isFinal(j) && j.status?.startTime ? "…" : ""}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <nav className="pager" aria-label="Pages">
        <button type="button" disabled={firstPage} onClick={() => setTokens((t) => t.slice(0, -1))}>Newer</button>
        <button type="button" disabled={!next} onClick={() => setTokens((t) => [...t, next])}>Older</button>
      </nav>
      <Confirm
        open={confirm !== undefined}
        title={confirm === "delete" ? `Delete ${selected.size} job(s)?` : `Cancel ${selected.size} job(s)?`}
        confirmLabel={confirm === "delete" ? "Delete" : "Cancel jobs"}
        danger
        onConfirm={() => confirm && void act(confirm)}
        onCancel={() => setConfirm(undefined)}
      >
        <p>
          {confirm === "delete"
            ? "Deleting removes the jobs, their events and kept logs. Only finished jobs can be deleted."
            : "Running replicas are stopped; queued jobs never start."}
        </p>
        <ul>{[...selected].map((n) => <li key={n}>{jobId(n)}</li>)}</ul>
      </Confirm>
    </>
  );
}
