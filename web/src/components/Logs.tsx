import { useEffect, useRef, useState } from "react";
import { ApiError, paths } from "../api/client";
import { useSession } from "../session";

// Logs shows one replica's log: followed live while its pod runs, and the
// tail Trainyard kept once the pod is gone (the API decides which).
export function Logs(props: { job: string; tenant: string; replicas: string[]; running: boolean; state: string }) {
  const { api } = useSession();
  const [replica, setReplica] = useState(props.replicas[0] ?? "");
  const [follow, setFollow] = useState(props.running);
  const [text, setText] = useState("");
  const [status, setStatus] = useState<"loading" | "streaming" | "ended" | "error">("loading");
  const [error, setError] = useState<string>();
  const [copied, setCopied] = useState(false);
  const pre = useRef<HTMLPreElement>(null);
  const jobId = props.job.split("/").pop() ?? props.job;

  useEffect(() => {
    if (!props.replicas.includes(replica) && props.replicas[0]) setReplica(props.replicas[0]);
  }, [props.replicas, replica]);

  useEffect(() => {
    if (!replica) return;
    const ctl = new AbortController();
    setText("");
    setError(undefined);
    setStatus(follow ? "streaming" : "loading");
    const q = new URLSearchParams({ replica });
    if (follow) q.set("follow", "true");
    api
      .text(`${paths.job(props.job)}/logs?${q}`, (chunk) => setText((t) => t + chunk), ctl.signal)
      .then(
        () => !ctl.signal.aborted && setStatus("ended"),
        (e: Error) => {
          if (ctl.signal.aborted) return;
          // Before its pod exists a replica has no log; it is read again
          // when the job's state moves on.
          setError(e instanceof ApiError && e.status === 404 && props.running ? "No log yet: the replica has not started." : e.message);
          setStatus("error");
        },
      );
    return () => ctl.abort();
    // The job's state is a dependency on purpose: a new state (the pod
    // started, restarted or ended) is a reason to read the log again.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, props.job, replica, follow, props.state]);

  // Keep the newest lines in view while following.
  useEffect(() => {
    const el = pre.current;
    if (el && follow) el.scrollTop = el.scrollHeight;
  }, [text, follow]);

  const command = `tyctl jobs logs ${jobId} --tenant ${props.tenant} --replica ${replica}${follow ? " --follow" : ""}`;
  async function copy() {
    await navigator.clipboard.writeText(command);
    setCopied(true);
    window.setTimeout(() => setCopied(false), 2000);
  }

  return (
    <section aria-labelledby="logs-title" className="logs">
      <h2 id="logs-title">Logs</h2>
      <div className="log-controls">
        <label>
          Replica
          <select value={replica} onChange={(e) => setReplica(e.target.value)}>
            {props.replicas.map((r) => <option key={r} value={r}>{r}</option>)}
          </select>
        </label>
        <label className="check">
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow
        </label>
        <code className="command" aria-label="Equivalent tyctl command">{command}</code>
        <button type="button" onClick={() => void copy()}>{copied ? "Copied" : "Copy command"}</button>
      </div>
      <pre ref={pre} className="log" tabIndex={0} aria-label={`Log of ${replica}`} data-status={status}>
        {text || (status === "ended" ? "(empty)" : "")}
      </pre>
      <p className="sub" aria-live="polite">
        {status === "streaming" && "Following the live log…"}
        {status === "ended" && (follow ? "The stream ended: the replica stopped." : "End of log.")}
        {status === "loading" && "Loading…"}
      </p>
      {error && <p role="alert" className="error">{error}</p>}
    </section>
  );
}
