import { useEffect, useState, type ReactNode } from "react";
import { BrowserRouter, Link, Navigate, NavLink, Route, Routes, useLocation, useNavigate } from "react-router";
import type { Tenant } from "./api/types";
import { SessionProvider, useSession } from "./session";
import { SignIn, SignInCallback } from "./pages/SignIn";
import { JobsPage } from "./pages/Jobs";
import { JobPage } from "./pages/Job";
import { SubmitPage } from "./pages/Submit";
import { TenantPage, TenantsPage } from "./pages/Tenants";
import { WebhooksPage } from "./pages/Webhooks";
import { ExperimentsPage } from "./pages/Experiments";
import { UsagePage } from "./pages/Usage";

export function App() {
  return (
    <SessionProvider>
      <BrowserRouter>
        <Routes>
          <Route path="/signin" element={<SignIn />} />
          <Route path="/signin/callback" element={<SignInCallback />} />
          <Route path="*" element={<SignedIn />} />
        </Routes>
      </BrowserRouter>
    </SessionProvider>
  );
}

function SignedIn() {
  const { session } = useSession();
  const location = useLocation();
  if (!session) return <Navigate to="/signin" replace state={{ from: location.pathname + location.search }} />;
  return (
    <Shell>
      <Routes>
        <Route path="/" element={<Home />} />
        <Route path="/tenants" element={<TenantsPage />} />
        <Route path="/tenants/:tenant" element={<TenantPage />} />
        <Route path="/tenants/:tenant/jobs" element={<JobsPage />} />
        <Route path="/tenants/:tenant/jobs/:job" element={<JobPage />} />
        <Route path="/tenants/:tenant/submit" element={<SubmitPage />} />
        <Route path="/tenants/:tenant/webhooks" element={<WebhooksPage />} />
        <Route path="/tenants/:tenant/experiments" element={<ExperimentsPage />} />
        <Route path="/tenants/:tenant/experiments/:experiment" element={<ExperimentsPage />} />
        <Route path="/tenants/:tenant/usage" element={<UsagePage />} />
        <Route path="*" element={<p>Nothing here. <Link to="/">Go to your jobs</Link>.</p>} />
      </Routes>
    </Shell>
  );
}

// useTenants lists the tenants the caller belongs to (all, for platform admins).
export function useTenants(): { tenants?: Tenant[]; error?: string } {
  const { api } = useSession();
  const [state, setState] = useState<{ tenants?: Tenant[]; error?: string }>({});
  useEffect(() => {
    const ctl = new AbortController();
    api.get<{ tenants?: Tenant[] }>("/v1/tenants?pageSize=1000", ctl.signal).then(
      (r) => setState({ tenants: r.tenants ?? [] }),
      (e: Error) => !ctl.signal.aborted && setState({ error: e.message }),
    );
    return () => ctl.abort();
  }, [api]);
  return state;
}

export const tenantId = (t: Tenant) => t.name.replace(/^tenants\//, "");

function Home() {
  const { tenants, error } = useTenants();
  if (error) return <p role="alert" className="error">{error}</p>;
  if (!tenants) return <p aria-live="polite">Loading…</p>;
  const first = tenants.find((t) => t.state === "TENANT_STATE_ACTIVE") ?? tenants[0];
  if (!first) return <p>You are not a member of any tenant yet. Ask a platform admin to add you.</p>;
  return <Navigate to={`/tenants/${tenantId(first)}/jobs`} replace />;
}

function Shell({ children }: { children: ReactNode }) {
  const { session, signOut, expiringSoon } = useSession();
  // The shell sits above the page routes, so it reads the tenant from the path.
  const current = /^\/tenants\/([^/]+)/.exec(useLocation().pathname)?.[1];
  const { tenants } = useTenants();
  const navigate = useNavigate();
  return (
    <>
      <a className="skip" href="#main">Skip to content</a>
      <header className="top">
        <Link to="/" className="brand">Trainyard</Link>
        <label className="tenant-pick">
          <span>Tenant</span>
          <select
            value={current ?? ""}
            onChange={(e) => navigate(`/tenants/${e.target.value}/jobs`)}
          >
            {!current && <option value="">Choose…</option>}
            {(tenants ?? []).map((t) => (
              <option key={t.name} value={tenantId(t)}>{t.displayName || tenantId(t)}</option>
            ))}
          </select>
        </label>
        <nav aria-label="Main">
          {current && <NavLink to={`/tenants/${current}/jobs`} end>Jobs</NavLink>}
          {current && <NavLink to={`/tenants/${current}/submit`}>Submit</NavLink>}
          {current && <NavLink to={`/tenants/${current}/experiments`}>Experiments</NavLink>}
          {current && <NavLink to={`/tenants/${current}/usage`}>Usage</NavLink>}
          {current && <NavLink to={`/tenants/${current}/webhooks`}>Webhooks</NavLink>}
          <NavLink to="/tenants" end>Tenants</NavLink>
          <a href="/docs">API</a>
        </nav>
        <span className="who" title="Signed in as">{session?.subject ?? "token"}</span>
        <button type="button" onClick={() => signOut()}>Sign out</button>
      </header>
      {expiringSoon && (
        <p role="alert" className="notice banner">
          Your session expires in less than a minute. <button type="button" onClick={() => signOut("Sign in again to continue.")}>Sign in again</button>
        </p>
      )}
      <main id="main">{children}</main>
    </>
  );
}
