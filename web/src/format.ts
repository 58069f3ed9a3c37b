// How the console writes times, states and resources. Times are shown in
// the viewer's time zone; ages and durations are relative.
import type { Job, JobState, Quota, ReplicaType } from "./api/types";

export function shortEnum(v: string | undefined, prefix: string): string {
  if (!v) return "";
  return v.startsWith(prefix) ? v.slice(prefix.length) : v;
}

export const stateName = (s: JobState | undefined) => shortEnum(s, "JOB_STATE_") || "UNKNOWN";
export const replicaTypeName = (t: ReplicaType | undefined) => shortEnum(t, "REPLICA_TYPE_").toLowerCase();

export const finalStates: JobState[] = ["JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"];
export const isFinal = (j: Job) => finalStates.includes(j.status?.state ?? "JOB_STATE_UNSPECIFIED");

// The state a person should read: CANCELLING while a cancel is under way,
// SUSPENDING while a suspension is.
export function displayState(j: Job): string {
  if (j.status?.cancelRequested && !isFinal(j)) return "CANCELLING";
  if (j.status?.suspendRequested && !isFinal(j) && j.status?.state !== "JOB_STATE_SUSPENDED") return "SUSPENDING";
  return stateName(j.status?.state);
}

export function localTime(iso: string | undefined): string {
  if (!iso) return "";
  return new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

// duration writes milliseconds as kubectl writes ages: 45s, 3m12s, 2h5m, 3d4h.
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m}m${s % 60}s` : `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h}h${m % 60}m` : `${h}h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d}d${h % 24}h` : `${d}d`;
}

export function age(iso: string | undefined, now: number): string {
  return iso ? duration(now - Date.parse(iso)) : "";
}

// jobDuration is how long the job ran: from its pods' start to its end (or now).
export function jobDuration(j: Job, now: number): string {
  const start = j.status?.startTime;
  if (!start) return "";
  const end = j.status?.completionTime ? Date.parse(j.status.completionTime) : now;
  return duration(end - Date.parse(start));
}

// replicasReady is "ready/total": replicas running or succeeded out of
// those the spec asks for.
export function replicasReady(j: Job): { ready: number; total: number } {
  const total = (j.spec?.replicas ?? []).reduce((n, r) => n + Math.max(r.count ?? 1, 1), 0);
  const ready = (j.status?.replicaCounts ?? []).reduce((n, c) => n + (c.active ?? 0) + (c.succeeded ?? 0), 0);
  return { ready, total };
}

export function gpus(j: Job): number {
  return (j.spec?.replicas ?? []).reduce((n, r) => n + Math.max(r.count ?? 1, 1) * (r.resources?.gpu ?? 0), 0);
}

// waitingFor says what a queued job waits for: from Job.status.queue,
// the scheduler's queue view, else from its Admitted condition, which the
// scheduler sets in the same cycle and which comes with every watch event.
export function waitingFor(j: Job): string {
  const q = j.status?.queue;
  if (!q) {
    if (j.status?.state !== "JOB_STATE_QUEUED") return "";
    const c = j.status?.conditions?.find((c) => c.type === "Admitted" && !c.status);
    return c?.message ?? "";
  }
  const reason = shortEnum(q.reason, "WAIT_REASON_").toLowerCase();
  const parts = [reason];
  if (q.waitingFor?.length) parts.push(q.waitingFor.join(", "));
  // A job waiting for a dependency is outside the line: it waits for the
  // job to reach its condition, not behind it.
  if (q.blockedBy) parts.push(q.reason === "WAIT_REASON_DEPENDENCY" ? `on ${q.blockedBy}` : `behind ${q.blockedBy}`);
  return parts.filter(Boolean).join(": ");
}

// parseQuantity reads a Kubernetes quantity ("500m", "16Gi", "2") as a number.
export function parseQuantity(q: string | undefined): number {
  if (!q) return 0;
  const m = /^([0-9.]+)([a-zA-Z]*)$/.exec(q.trim());
  if (!m) return 0;
  const n = Number(m[1]);
  const unit = m[2] ?? "";
  const bin: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
  const dec: Record<string, number> = { m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
  return n * (bin[unit] ?? dec[unit] ?? 1);
}

export interface QuotaLine {
  resource: string;
  used: number;
  limit: number;
  usedText: string;
  limitText: string;
}

// quotaLines pairs a tenant's usage with its quota per resource; a limit
// of 0 means none.
export function quotaLines(quota: Quota | undefined, usage: Quota | undefined): QuotaLine[] {
  const q = quota ?? {};
  const u = usage ?? {};
  return [
    { resource: "GPUs", used: u.gpu ?? 0, limit: q.gpu ?? 0, usedText: String(u.gpu ?? 0), limitText: String(q.gpu ?? "") },
    { resource: "CPU", used: parseQuantity(u.cpu), limit: parseQuantity(q.cpu), usedText: u.cpu ?? "0", limitText: q.cpu ?? "" },
    { resource: "Memory", used: parseQuantity(u.memory), limit: parseQuantity(q.memory), usedText: u.memory ?? "0", limitText: q.memory ?? "" },
    { resource: "Pods", used: u.pods ?? 0, limit: q.pods ?? 0, usedText: String(u.pods ?? 0), limitText: String(q.pods ?? "") },
  ];
}
