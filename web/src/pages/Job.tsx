import { useEffect, useMemo, useState } from "react";
import { Link, useNavigate, useParams } from "react-router";
import { stringify } from "yaml";
import { ApiError, paths } from "../api/client";
import type { Job, JobEvent, ReplicaStatus } from "../api/types";
import { Confirm } from "../components/Confirm";
import { DependencyGraph } from "../components/DependencyGraph";
import { GPUUtilization } from "../components/GPUUtilization";
import { JobTimeline } from "../components/JobTimeline";
import { Logs } from "../components/Logs";
import { useNow } from "../components/useNow";
import { age, displayState, duration, isFinal, jobDuration, localTime, replicaTypeName, shortEnum, stateName, waitingFor } from "../format";
import { afterWatchError } from "../live";
import { useSession } from "../session";

export const replicaId = (r: ReplicaStatus) => `${replicaTypeName(r.type)}-${r.index ?? 0}`;

// jobFileOf is the job as a job file (what Submit takes): the fields a
// user sets, none of the output-only ones.
export function jobFileOf(j: Job): string {
  const file: Record<string, unknown> = {};
  if (j.displayName) file.displayName = j.displayName;
  if (j.labels && Object.keys(j.labels).length) file.labels = j.labels;
  file.spec = j.spec ?? {};
  return stringify(file);
}

// JobPage shows one job, kept current by its watch.
export function JobPage() {
  const { tenant = "", job = "" } = useParams();
  const name = `tenants/${tenant}/jobs/${job}`;
  const { api } = useSession();
  const navigate = useNavigate();
  const [j, setJob] = useState<Job>();
  const [events, setEvents] = useState<JobEvent[]>([]);
  const [error, setError] = useState<string>();
  const [confirm, setConfirm] = useState<"cancel" | "delete">();
  const [actionError, setActionError] = useState<string>();
  const now = useNow(1000);

  // The job's events, then the job, then its watch from the last event
  // listed: "after id N" misses nothing, where a watch "from now" started
  // beside the reads would miss what committed between them (a RUNNING
  // that landed while the page loaded was never shown). Every event
  // re-reads the job (the watch's copy leaves out TF_CONFIG and log tails)
  // and joins the timeline.
  useEffect(() => {
    const ctl = new AbortController();
    let after = "0";
    // read lists the events and reads the job; false when the page has
    // nothing to show (the job is gone, or the read failed).
    const read = async (): Promise<boolean> => {
      try {
        const r = await api.get<{ events?: JobEvent[] }>(`${paths.job(name)}/events?pageSize=1000`, ctl.signal);
        const listed = r.events ?? [];
        setEvents(listed);
        after = listed[listed.length - 1]?.id ?? "0";
      } catch {
        // No list: the watch starts from now.
        after = "0";
      }
      try {
        setJob(await api.get<Job>(paths.job(name), ctl.signal));
        return true;
      } catch (e) {
        if (!ctl.signal.aborted) {
          setError(e instanceof ApiError && e.status === 404 ? `No job ${job} in ${tenant}.` : (e as Error).message);
        }
        return false;
      }
    };
    void (async () => {
      if (!(await read())) return;
      while (!ctl.signal.aborted) {
        try {
          await api.lines<{ event?: JobEvent; job?: Job }>(`${paths.job(name)}:watch?afterEventId=${after}`, (m) => {
            const ev = m.event;
            if (!ev) return;
            after = ev.id;
            setEvents((list) => (list.some((e) => e.id === ev.id) ? list : [...list, ev]));
            api.get<Job>(paths.job(name)).then(setJob, () => undefined);
          }, ctl.signal);
        } catch (e) {
          if (ctl.signal.aborted) return;
          const next = afterWatchError(e);
          if (next === "stop") return;
          // The server no longer keeps the events after `after` (event
          // retention): read the events and the job again, and watch on
          // from there.
          if (next === "relist" && !(await read())) return;
        }
        // The server ends the watch when the job is final; nothing more comes.
        if (ctl.signal.aborted) return;
        await new Promise((r) => setTimeout(r, 2000));
      }
    })();
    return () => ctl.abort();
  }, [api, name, job, tenant]);

  const history = useMemo(() => {
    const out: { state: string; time?: string }[] = [];
    for (const e of events) {
      const s = stateName(e.state);
      if (e.state && out[out.length - 1]?.state !== s) out.push({ state: s, time: e.createTime });
    }
    return out;
  }, [events]);

  if (error) return <p role="alert" className="error">{error} <Link to={`/tenants/${tenant}/jobs`}>Back to the jobs</Link></p>;
  if (!j) return <p aria-live="polite">Loading…</p>;

  async function act(kind: "cancel" | "delete" | "suspend" | "resume") {
    setConfirm(undefined);
    setActionError(undefined);
    try {
      if (kind !== "delete") setJob(await api.call<Job>("POST", `${paths.job(name)}:${kind}`, {}));
      else {
        await api.call("DELETE", paths.job(name));
        navigate(`/tenants/${tenant}/jobs`);
      }
    } catch (e) {
      setActionError((e as Error).message);
    }
  }

  const st = j.status ?? {};
  const replicas = st.replicas ?? [];
  const tb = j.spec?.tensorboard?.enabled;
  return (
    <>
      <div className="page-head">
        <h1>
          {job} <span className={`state state-${displayState(j).toLowerCase()}`} data-testid="job-state">{displayState(j)}</span>
        </h1>
        <div className="actions">
          {!isFinal(j) && !st.suspendRequested && st.state !== "JOB_STATE_SUSPENDED" && (
            <button type="button" onClick={() => void act("suspend")} title="Stop its pods gracefully and release its quota until resumed">Suspend</button>
          )}
          {!isFinal(j) && (st.suspendRequested || st.state === "JOB_STATE_SUSPENDED") && (
            <button type="button" onClick={() => void act("resume")} title="Queue it again">Resume</button>
          )}
          {!isFinal(j) && <button type="button" onClick={() => setConfirm("cancel")}>Cancel…</button>}
          {isFinal(j) && <button type="button" className="danger" onClick={() => setConfirm("delete")}>Delete…</button>}
          <button type="button" onClick={() => navigate(`/tenants/${tenant}/submit`, { state: { yaml: jobFileOf(j) } })}>Submit again</button>
        </div>
      </div>
      {actionError && <p role="alert" className="error">{actionError}</p>}
      {j.displayName && <p className="lead">{j.displayName}</p>}
      <dl className="facts">
        <dt>Created</dt><dd><time dateTime={j.createTime}>{localTime(j.createTime)}</time> ({age(j.createTime, now)} ago) by {j.creator}</dd>
        {st.startTime && <><dt>Started</dt><dd><time dateTime={st.startTime}>{localTime(st.startTime)}</time></dd></>}
        {st.completionTime && <><dt>Finished</dt><dd><time dateTime={st.completionTime}>{localTime(st.completionTime)}</time></dd></>}
        {st.startTime && <><dt>Duration</dt><dd>{jobDuration(j, now)}</dd></>}
        {(st.reason || st.message) && <><dt>Reason</dt><dd>{st.reason}{st.message ? `: ${st.message}` : ""}</dd></>}
        {st.cluster && <><dt>Cluster</dt><dd data-testid="job-cluster">{st.cluster}</dd></>}
        {tb && <><dt>TensorBoard</dt><dd><TensorBoardLink name={name} /></dd></>}
        <dt>Priority</dt><dd>{j.spec?.priority ?? 0}</dd>
        <dt>Restarts</dt><dd>{st.restarts ?? 0}{st.requeues ? `, requeued ${st.requeues}×` : ""}</dd>
        {(j.spec?.dependsOn ?? []).length > 0 && (
          <>
            <dt>Depends on</dt>
            <dd>
              {(j.spec?.dependsOn ?? []).map((d, i) => {
                const r = (st.dependencies ?? []).find((x) => x.job === d.job);
                return (
                  <span key={d.job} data-dependency={d.job}>
                    {i > 0 ? ", " : ""}<Link to={`/tenants/${tenant}/jobs/${d.job}`}>{d.job}</Link>{" "}
                    ({shortEnum(d.condition, "DEPENDENCY_CONDITION_").toLowerCase()}{r ? `; was ${stateName(r.state)} at admission` : ""})
                  </span>
                );
              })}
            </dd>
          </>
        )}
        {st.outputs && Object.keys(st.outputs).length > 0 && (
          <><dt>Outputs</dt><dd>{Object.entries(st.outputs).map(([k, v]) => <code key={k} className="output">{k}={v}</code>)}</dd></>
        )}
        {st.queue && (
          <>
            <dt>Queue</dt>
            <dd>
              {st.queue.tenantPosition ? `#${st.queue.tenantPosition} in the tenant` : ""}
              {st.queue.clusterPosition ? `, #${st.queue.clusterPosition} overall` : ""} — waiting for {waitingFor(j)}
              {st.queue.message ? `. ${st.queue.message}` : ""}
              {st.queue.estimatedStartTime ? ` Estimated start ${localTime(st.queue.estimatedStartTime)} (${shortEnum(st.queue.estimateBasis, "ESTIMATE_BASIS_").toLowerCase().replace(/_/g, " ")}).` : ""}
            </dd>
          </>
        )}
      </dl>

      <DependencyGraph tenant={tenant} job={job} state={st.state} />

      <section aria-labelledby="history-title">
        <h2 id="history-title">State history</h2>
        <JobTimeline events={events} now={isFinal(j) ? 0 : now} />
        <ol className="history">
          {history.map((h, i) => (
            <li key={i}><span className={`state state-${h.state.toLowerCase()}`}>{h.state}</span> <time dateTime={h.time}>{localTime(h.time)}</time></li>
          ))}
        </ol>
        <table>
          <caption>Conditions</caption>
          <thead><tr><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Message</th><th scope="col">Since</th></tr></thead>
          <tbody>
            {(st.conditions ?? []).map((c) => (
              <tr key={c.type}>
                <th scope="row">{c.type}</th><td>{c.status ? "True" : "False"}</td><td>{c.reason}</td><td>{c.message}</td>
                <td><time dateTime={c.lastTransitionTime} title={localTime(c.lastTransitionTime)}>{c.lastTransitionTime ? `${duration(now - Date.parse(c.lastTransitionTime))} ago` : ""}</time></td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>

      <section aria-labelledby="replicas-title">
        <h2 id="replicas-title">Replicas</h2>
        <table className="replicas">
          <thead>
            <tr><th scope="col">Replica</th><th scope="col">Pod</th><th scope="col">Node</th><th scope="col">State</th><th scope="col">Restarts</th><th scope="col">Exit code</th><th scope="col">Reason</th><th scope="col">TF_CONFIG</th></tr>
          </thead>
          <tbody>
            {replicas.map((r) => {
              const t = r.lastTermination;
              return (
                <tr key={replicaId(r)} data-replica={replicaId(r)}>
                  <th scope="row">{replicaId(r)}</th>
                  <td><code>{r.pod}</code></td>
                  <td>{r.node}</td>
                  <td>{shortEnum(r.state, "REPLICA_STATE_")}</td>
                  <td>{r.restarts ?? 0}</td>
                  <td>{t ? (t.exitCode ?? 0) : ""}</td>
                  <td title={t?.message}>{t?.reason}</td>
                  <td>
                    {r.tfConfig ? (
                      <details>
                        <summary>show</summary>
                        <pre className="tfconfig">{JSON.stringify(JSON.parse(r.tfConfig), null, 2)}</pre>
                      </details>
                    ) : "none (one replica)"}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </section>

      {(j.spec?.replicas ?? []).some((r) => (r.resources?.gpu ?? 0) > 0) && (
        <GPUUtilization job={name} running={!isFinal(j)} kept={st.gpuUtilization} replicas={replicas} />
      )}

      {replicas.length > 0 && <Logs job={name} tenant={tenant} replicas={replicas.map(replicaId)} running={!isFinal(j)} state={displayState(j)} />}

      <section aria-labelledby="events-title">
        <h2 id="events-title">Events</h2>
        <ol className="timeline">
          {events.map((e) => (
            <li key={e.id} className={e.type === "Warning" ? "warning" : ""}>
              <time dateTime={e.createTime} title={localTime(e.createTime)}>{localTime(e.createTime)}</time>
              <strong>{e.reason}</strong> <span>{e.message}</span>
            </li>
          ))}
        </ol>
      </section>

      <section aria-labelledby="spec-title">
        <h2 id="spec-title">Spec</h2>
        <pre className="yaml" tabIndex={0} aria-label="The job as YAML">{jobFileOf(j)}</pre>
      </section>

      <Confirm
        open={confirm !== undefined}
        title={confirm === "delete" ? `Delete ${job}?` : `Cancel ${job}?`}
        confirmLabel={confirm === "delete" ? "Delete" : "Cancel job"}
        danger
        onConfirm={() => confirm && void act(confirm)}
        onCancel={() => setConfirm(undefined)}
      >
        <p>{confirm === "delete" ? "The job, its events and kept logs are removed." : "Its replicas are stopped; it ends CANCELLED."}</p>
      </Confirm>
    </>
  );
}

// TensorBoardLink opens the job's TensorBoard, which the API server
// proxies. A link carries no Authorization header, so the console first
// asks the server (tensorboard:open) to keep the session's token in a
// cookie that only this job's TensorBoard path receives (HttpOnly: this
// page's scripts cannot read it back).
function TensorBoardLink({ name }: { name: string }) {
  const { api } = useSession();
  const [url, setUrl] = useState<string>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    api.call<{ url: string }>("POST", `${paths.job(name)}/tensorboard:open`).then((r) => setUrl(r.url), (e: Error) => setError(e.message));
  }, [api, name]);
  if (error) return <span className="error">TensorBoard cannot be opened: {error}</span>;
  if (!url) return <span aria-live="polite">…</span>;
  return <a className="tensorboard" href={url} target="_blank" rel="noopener noreferrer">Open TensorBoard</a>;
}
