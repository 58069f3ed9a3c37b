import { useCallback, useEffect, useState, type FormEvent } from "react";
import { useParams } from "react-router";
import { ApiError, paths } from "../api/client";
import type { Webhook, WebhookDelivery, WebhookEventType } from "../api/types";
import { localTime, shortEnum } from "../format";
import { useSession } from "../session";

// The event types a webhook may subscribe to, in the API's order.
const eventTypes: WebhookEventType[] = [
  "WEBHOOK_EVENT_TYPE_JOB_CREATED", "WEBHOOK_EVENT_TYPE_JOB_ADMITTED", "WEBHOOK_EVENT_TYPE_JOB_RUNNING",
  "WEBHOOK_EVENT_TYPE_JOB_SUCCEEDED", "WEBHOOK_EVENT_TYPE_JOB_FAILED", "WEBHOOK_EVENT_TYPE_JOB_CANCELLED",
  "WEBHOOK_EVENT_TYPE_JOB_PREEMPTED", "WEBHOOK_EVENT_TYPE_JOB_REPLICA_RESTARTED", "WEBHOOK_EVENT_TYPE_TENANT_QUOTA_CHANGED",
];

// topic is an event type as the CloudEvent names it: job.succeeded.
export const topic = (t: string) => shortEnum(t, "WEBHOOK_EVENT_TYPE_").toLowerCase().replace("_", ".");

// newSecret makes a Standard Webhooks signing secret in the browser: the
// server stores it write-only, so this page shows it once.
function newSecret(): string {
  const b = new Uint8Array(32);
  crypto.getRandomValues(b);
  return "whsec_" + btoa(String.fromCharCode(...b));
}

const hookId = (w: Webhook) => w.name.split("/").pop() ?? w.name;

// WebhooksPage lists the tenant's webhooks (tenant admins), creates one,
// and shows a webhook's delivery log with ping, redelivery and enabling.
export function WebhooksPage() {
  const { tenant = "" } = useParams();
  const { api } = useSession();
  const [hooks, setHooks] = useState<Webhook[]>();
  const [error, setError] = useState<string>();
  const [open, setOpen] = useState<string>();
  const base = `${paths.tenant(tenant)}/webhooks`;

  const load = useCallback(() => {
    api.get<{ webhooks?: Webhook[] }>(base).then(
      (r) => setHooks(r.webhooks ?? []),
      (e: ApiError) => setError(e.status === 403 ? "Only the tenant's admins manage its webhooks." : e.message),
    );
  }, [api, base]);
  useEffect(load, [load]);

  if (error) return <p role="alert" className="error">{error}</p>;
  if (!hooks) return <p aria-live="polite">Loading…</p>;
  return (
    <>
      <h1>Webhooks</h1>
      <p className="sub">Each webhook gets a CloudEvent, signed as Standard Webhooks says, for every event it subscribes to: at least once, in order per job.</p>
      <table className="webhooks">
        <thead>
          <tr><th scope="col">Webhook</th><th scope="col">State</th><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Selector</th><th scope="col"></th></tr>
        </thead>
        <tbody>
          {hooks.length === 0 && <tr><td colSpan={6} className="empty">No webhooks.</td></tr>}
          {hooks.map((w) => (
            <tr key={w.name}>
              <th scope="row">{hookId(w)}{w.description && <div className="sub">{w.description}</div>}</th>
              <td>{shortEnum(w.state, "WEBHOOK_STATE_")}{w.stateReason && <div className="sub">{w.stateReason}</div>}</td>
              <td><code>{w.url}</code></td>
              <td>{(w.eventTypes ?? []).map(topic).join(", ")}</td>
              <td>{Object.entries(w.labelSelector ?? {}).map(([k, v]) => `${k}=${v}`).join(", ") || "all jobs"}</td>
              <td><button type="button" onClick={() => setOpen(open === w.name ? undefined : w.name)}>{open === w.name ? "Hide" : "Deliveries"}</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      {open && <Deliveries key={open} webhook={hooks.find((w) => w.name === open)!} onChange={load} />}
      <CreateWebhook base={base} onCreated={load} />
    </>
  );
}

function Deliveries({ webhook, onChange }: { webhook: Webhook; onChange: () => void }) {
  const { api } = useSession();
  const [list, setList] = useState<WebhookDelivery[]>();
  const [error, setError] = useState<string>();
  const path = `/v1/${webhook.name}`;
  const load = useCallback(() => {
    api.get<{ deliveries?: WebhookDelivery[] }>(`${path}/deliveries?pageSize=50`).then((r) => setList(r.deliveries ?? []), (e: Error) => setError(e.message));
  }, [api, path]);
  useEffect(() => {
    load();
    const timer = setInterval(load, 3000);
    return () => clearInterval(timer);
  }, [load]);
  const act = (p: Promise<unknown>) => p.then(() => { load(); onChange(); }, (e: Error) => setError(e.message));
  return (
    <section aria-label={`Deliveries of ${hookId(webhook)}`}>
      <div className="page-head">
        <h2>Deliveries of {hookId(webhook)}</h2>
        <button type="button" onClick={() => act(api.call("POST", `${path}:ping`, {}))}>Send a ping</button>
        {webhook.state === "WEBHOOK_STATE_DISABLED" && (
          <button type="button" onClick={() => act(api.call("PATCH", `${path}?updateMask=state`, { state: "WEBHOOK_STATE_ACTIVE" }))}>Enable again</button>
        )}
      </div>
      {error && <p role="alert" className="error">{error}</p>}
      <table className="deliveries">
        <thead>
          <tr><th scope="col">Event</th><th scope="col">Subject</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Latency</th><th scope="col">Time</th><th scope="col"></th></tr>
        </thead>
        <tbody>
          {list?.length === 0 && <tr><td colSpan={8} className="empty">Nothing sent yet.</td></tr>}
          {(list ?? []).map((d) => (
            <tr key={d.name}>
              <td title={d.messageId}>{(d.type ?? "").replace(/^dev\.trainyard\./, "")}</td>
              <td>{d.subject}</td>
              <td>{shortEnum(d.state, "DELIVERY_STATE_")}</td>
              <td>{d.attempts ?? 0}</td>
              <td>{d.lastStatusCode || "–"}{d.lastError && <div className="sub">{d.lastError}</div>}</td>
              <td>{d.attempts ? d.lastLatency : "–"}</td>
              <td><time dateTime={d.eventTime}>{localTime(d.eventTime)}</time></td>
              <td>{d.state !== "DELIVERY_STATE_PENDING" && <button type="button" onClick={() => act(api.call("POST", `/v1/${d.name}:redeliver`, {}))}>Redeliver</button>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function CreateWebhook({ base, onCreated }: { base: string; onCreated: () => void }) {
  const { api } = useSession();
  const [id, setId] = useState("");
  const [url, setUrl] = useState("");
  const [selector, setSelector] = useState("");
  const [types, setTypes] = useState<WebhookEventType[]>(["WEBHOOK_EVENT_TYPE_JOB_SUCCEEDED", "WEBHOOK_EVENT_TYPE_JOB_FAILED"]);
  const [shown, setShown] = useState<string>();
  const [problems, setProblems] = useState<string[]>([]);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const labelSelector: Record<string, string> = {};
    for (const kv of selector.split(",").map((s) => s.trim()).filter(Boolean)) {
      const [k = "", ...v] = kv.split("=");
      labelSelector[k] = v.join("=");
    }
    const secret = newSecret();
    api.call<Webhook>("POST", `${base}?webhookId=${encodeURIComponent(id)}`, { url, eventTypes: types, labelSelector, signingSecret: secret }).then(
      () => { setShown(secret); setProblems([]); onCreated(); },
      (err: Error) => setProblems(err instanceof ApiError && err.violations.length > 0 ? err.violations.map((v) => `${v.field}: ${v.description}`) : [err.message]),
    );
  };
  return (
    <form className="create-webhook" onSubmit={submit} aria-label="New webhook">
      <h2>New webhook</h2>
      <label>Id <input value={id} onChange={(e) => setId(e.target.value)} required pattern="[a-z0-9]([a-z0-9-]*[a-z0-9])?" /></label>
      <label>URL <input type="url" value={url} onChange={(e) => setUrl(e.target.value)} required placeholder="https://ci.example.com/hooks/trainyard" /></label>
      <label>Job labels <input value={selector} onChange={(e) => setSelector(e.target.value)} placeholder="pipeline=publish (empty: all jobs)" /></label>
      <fieldset>
        <legend>Events</legend>
        {eventTypes.map((t) => (
          <label key={t}>
            <input type="checkbox" checked={types.includes(t)} onChange={(e) => setTypes(e.target.checked ? [...types, t] : types.filter((x) => x !== t))} /> {topic(t)}
          </label>
        ))}
      </fieldset>
      <button type="submit">Create</button>
      {problems.map((p) => <p key={p} role="alert" className="error">{p}</p>)}
      {shown && (
        <p role="status" className="notice">
          Created. Its signing secret, shown only now — give it to the receiver: <code>{shown}</code>
        </p>
      )}
    </form>
  );
}
