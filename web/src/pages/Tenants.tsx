import { useEffect, useState } from "react";
import { Link, useParams } from "react-router";
import { ApiError, paths } from "../api/client";
import type { Cohort, Secret, Tenant } from "../api/types";
import { tenantId, useTenants } from "../App";
import { localTime, quotaLines, shortEnum } from "../format";
import { useSession } from "../session";

const tenantState = (t: Tenant) => shortEnum(t.state, "TENANT_STATE_");

// TenantsPage lists the tenants the caller may see: every tenant for a
// platform admin, their own for everyone else.
export function TenantsPage() {
  const { tenants, error } = useTenants();
  const { api } = useSession();
  // Cohorts span tenants: only platform admins may read them; for anyone
  // else the section stays hidden.
  const [cohorts, setCohorts] = useState<Cohort[]>();
  useEffect(() => {
    const ctl = new AbortController();
    api.get<{ cohorts?: Cohort[] }>(paths.cohorts, ctl.signal).then((r) => setCohorts(r.cohorts ?? []), () => undefined);
    return () => ctl.abort();
  }, [api]);
  if (error) return <p role="alert" className="error">{error}</p>;
  if (!tenants) return <p aria-live="polite">Loading…</p>;
  return (
    <>
      <h1>Tenants</h1>
      <table className="tenants">
        <thead>
          <tr><th scope="col">Tenant</th><th scope="col">State</th><th scope="col">Namespace</th><th scope="col">Members</th><th scope="col">GPU quota</th><th scope="col">Created</th></tr>
        </thead>
        <tbody>
          {tenants.length === 0 && <tr><td colSpan={6} className="empty">No tenants.</td></tr>}
          {tenants.map((t) => (
            <tr key={t.name}>
              <th scope="row"><Link to={`/tenants/${tenantId(t)}`}>{tenantId(t)}</Link>{t.displayName && <div className="sub">{t.displayName}</div>}</th>
              <td><span className={`tstate tstate-${tenantState(t).toLowerCase()}`}>{tenantState(t)}</span></td>
              <td><code>{t.namespace}</code></td>
              <td>{t.members?.length ?? 0}</td>
              <td>{t.quota?.gpu || "unlimited"}</td>
              <td><time dateTime={t.createTime}>{localTime(t.createTime)}</time></td>
            </tr>
          ))}
        </tbody>
      </table>
      {cohorts && cohorts.length > 0 && (
        <section aria-labelledby="cohorts-title">
          <h2 id="cohorts-title">Cohorts</h2>
          <p className="help">Tenants of a cohort lend one another their unused quota; a cohort's own pool belongs to none of them (tyctl cohorts put).</p>
          <table className="cohorts">
            <thead><tr><th scope="col">Cohort</th><th scope="col">Own pool</th><th scope="col">Tenants</th></tr></thead>
            <tbody>
              {cohorts.map((c) => (
                <tr key={c.name}>
                  <th scope="row">{c.name.split("/").pop()}</th>
                  <td>{cohortPool(c)}</td>
                  <td>{(c.tenants ?? []).map((t) => t.split("/").pop()).join(", ") || "none"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
    </>
  );
}

// cohortPool is a cohort's own pool in a line: "16 GPUs (A100: 16)".
function cohortPool(c: Cohort): string {
  const parts = [];
  if (c.nominalQuota?.gpu) parts.push(`${c.nominalQuota.gpu} GPUs`);
  if (c.nominalQuota?.cpu) parts.push(`${c.nominalQuota.cpu} CPU`);
  if (c.nominalQuota?.memory) parts.push(`${c.nominalQuota.memory} memory`);
  const models = Object.entries(c.gpuTypes ?? {}).sort().map(([m, n]) => `${m}: ${n}`);
  if (models.length > 0) parts.push(`(${models.join(", ")})`);
  return parts.join(", ") || "none";
}

// TenantPage shows one tenant: quota against current usage, members,
// secrets (names and keys only: values are write-only) and its state.
export function TenantPage() {
  const { tenant = "" } = useParams();
  const { api } = useSession();
  const [t, setTenant] = useState<Tenant>();
  const [secrets, setSecrets] = useState<Secret[]>();
  const [secretsError, setSecretsError] = useState<string>();
  const [error, setError] = useState<string>();

  useEffect(() => {
    const ctl = new AbortController();
    api.get<Tenant>(paths.tenant(tenant), ctl.signal).then(setTenant, (e: Error) => !ctl.signal.aborted && setError(e.message));
    api.get<{ secrets?: Secret[] }>(`${paths.tenant(tenant)}/secrets`, ctl.signal).then(
      (r) => setSecrets(r.secrets ?? []),
      (e: ApiError) => !ctl.signal.aborted && setSecretsError(e.status === 403 ? "Only the tenant's admins see its secrets." : e.message),
    );
    return () => ctl.abort();
  }, [api, tenant]);

  if (error) return <p role="alert" className="error">{error}</p>;
  if (!t) return <p aria-live="polite">Loading…</p>;
  const state = tenantState(t);
  return (
    <>
      <div className="page-head">
        <h1>{t.displayName || tenant} <span className={`tstate tstate-${state.toLowerCase()}`}>{state}</span></h1>
        <Link className="button" to={`/tenants/${tenant}/jobs`}>Jobs</Link>
      </div>
      {state === "OFFBOARDING" && (
        <p role="status" className="notice">
          Offboarding: no new jobs are accepted, running jobs are being cancelled, and the namespace is deleted once they have stopped.
        </p>
      )}
      {state === "DELETED" && <p role="status" className="notice">Offboarded: the namespace and its secrets are gone.</p>}
      <dl className="facts">
        <dt>Id</dt><dd>{tenant}</dd>
        <dt>Namespace</dt><dd><code>{t.namespace}</code></dd>
        <dt>Clusters</dt>
        <dd data-testid="tenant-clusters">{(t.clusters ?? []).length > 0 ? t.clusters?.join(", ") : "every cluster"}</dd>
        <dt>Scheduling</dt>
        <dd>
          {shortEnum(t.scheduling?.queueingStrategy, "QUEUEING_STRATEGY_").toLowerCase().replace(/_/g, " ")}, preemption{" "}
          {shortEnum(t.scheduling?.preemptionPolicy, "PREEMPTION_POLICY_").toLowerCase().replace(/_/g, " ")}
        </dd>
        {t.sharing?.cohort && (
          <>
            <dt>Cohort</dt>
            <dd>
              {t.sharing.cohort}: borrows {t.sharing.borrowingLimit?.gpu ? `up to ${t.sharing.borrowingLimit.gpu} GPUs` : "what the cohort leaves unused"},
              lends {t.sharing.lendingLimit?.gpu ? `up to ${t.sharing.lendingLimit.gpu} GPUs` : "all its unused quota"}; weight {t.sharing.weight || 1}, reclaim{" "}
              {shortEnum(t.sharing.reclaimPolicy, "RECLAIM_POLICY_").toLowerCase().replace(/_/g, " ") || "any"}
              {t.sharing.fairSharePreemption ? ", fair-share preemption" : ""}
            </dd>
          </>
        )}
        {t.sharing?.gpuTypes && Object.keys(t.sharing.gpuTypes).length > 0 && (
          <>
            <dt>GPU types</dt>
            <dd>{Object.entries(t.sharing.gpuTypes).sort().map(([m, n]) => `${m}: ${n}`).join(", ")}</dd>
          </>
        )}
        {t.sharing?.budget && (
          <>
            <dt>GPU-hour budget</dt>
            <dd>
              {t.sharing.budget.gpuHours} per {t.sharing.budget.period === "BUDGET_PERIOD_ROLLING_30D" ? "rolling 30 days" : "month"}
              {t.sharingStatus && (
                <>
                  : {(t.sharingStatus.budgetUsedGpuHours ?? 0).toFixed(1)} used, {(t.sharingStatus.budgetRemainingGpuHours ?? 0).toFixed(1)} remaining
                  {t.sharingStatus.budgetResetTime && <>, resets <time dateTime={t.sharingStatus.budgetResetTime}>{localTime(t.sharingStatus.budgetResetTime)}</time></>}
                </>
              )}
            </dd>
          </>
        )}
        {t.sharingStatus?.decayedUsage && (
          <>
            <dt>Decayed usage</dt>
            <dd>{t.sharingStatus.decayedUsage.gpu ?? 0} GPUs (half-life {Math.round(Number(t.sharing?.usageHalfLifeSeconds ?? 0) / 3600)} h)</dd>
          </>
        )}
        <dt>Created</dt><dd><time dateTime={t.createTime}>{localTime(t.createTime)}</time></dd>
      </dl>

      <section aria-labelledby="quota-title">
        <h2 id="quota-title">Quota and usage</h2>
        <p className="help">What the tenant's admitted jobs that have not finished request, against its quota.</p>
        <div className="quota">
          {quotaLines(t.quota, t.usage).map((q) => {
            const id = `quota-${q.resource.toLowerCase()}`;
            return (
              <div key={q.resource} className="quota-line">
                <label htmlFor={id}>{q.resource}</label>
                {q.limit > 0 ? (
                  <meter id={id} min={0} max={q.limit} value={Math.min(q.used, q.limit)} low={q.limit * 0.7} high={q.limit * 0.9} optimum={0}>
                    {q.usedText} of {q.limitText}
                  </meter>
                ) : (
                  <span id={id} className="sub">no limit</span>
                )}
                <span className="amount">{q.usedText}{q.limit > 0 ? ` of ${q.limitText}` : " in use"}</span>
              </div>
            );
          })}
        </div>
      </section>

      <section aria-labelledby="members-title">
        <h2 id="members-title">Members</h2>
        <table>
          <thead><tr><th scope="col">Who</th><th scope="col">Kind</th><th scope="col">Role</th></tr></thead>
          <tbody>
            {(t.members ?? []).length === 0 && <tr><td colSpan={3} className="empty">No members.</td></tr>}
            {(t.members ?? []).map((m) => (
              <tr key={(m.subject ?? "") + (m.group ?? "")}>
                <th scope="row">{m.subject ?? m.group}</th>
                <td>{m.subject ? "user" : "group"}</td>
                <td>{shortEnum(m.role, "ROLE_").toLowerCase()}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {(t.podReaderGroups ?? []).length > 0 && <p>Pod readers: {t.podReaderGroups?.join(", ")}</p>}
      </section>

      <section aria-labelledby="secrets-title">
        <h2 id="secrets-title">Secrets</h2>
        <p className="help">Names and keys; values are write-only and never leave the cluster.</p>
        {secretsError && <p className="sub">{secretsError}</p>}
        {secrets && (
          <table>
            <thead><tr><th scope="col">Secret</th><th scope="col">Keys</th><th scope="col">Updated</th></tr></thead>
            <tbody>
              {secrets.length === 0 && <tr><td colSpan={3} className="empty">No secrets.</td></tr>}
              {secrets.map((s) => (
                <tr key={s.name}>
                  <th scope="row">{s.name.split("/").pop()}</th>
                  <td>{(s.keys ?? []).map((k) => <code key={k} className="key">{k}</code>)}</td>
                  <td><time dateTime={s.updateTime}>{localTime(s.updateTime)}</time></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}
