// Sign-in state. The bearer token lives in this tab's sessionStorage only
// (so a reload keeps you signed in, closing the tab signs you out) and is
// sent only in the Authorization header of API calls: never in a URL,
// never logged.
import { UserManager, WebStorageStateStore } from "oidc-client-ts";

export interface Session {
  token: string;
  // Who the token says it is, when it is a JWT; dev tokens are opaque.
  subject?: string;
  // Epoch milliseconds from the JWT's exp claim, if any.
  expiresAt?: number;
  via: "token" | "oidc";
}

export interface ConsoleConfig {
  oidc?: { issuer: string; clientId: string; scopes: string };
  tokenSignIn: boolean;
}

const key = "trainyard.session";

export function loadSession(): Session | null {
  const raw = sessionStorage.getItem(key);
  if (!raw) return null;
  try {
    const s = JSON.parse(raw) as Session;
    return s.expiresAt && s.expiresAt <= Date.now() ? null : s;
  } catch {
    return null;
  }
}

export function saveSession(s: Session | null): void {
  if (s) sessionStorage.setItem(key, JSON.stringify(s));
  else sessionStorage.removeItem(key);
}

// claims reads a JWT's payload without verifying it: the server verifies;
// the console only wants to know when to ask for a new sign-in and whom to
// greet.
export function claims(token: string): { sub?: string; exp?: number; email?: string } | null {
  const parts = token.split(".");
  if (parts.length !== 3 || !parts[1]) return null;
  try {
    const b64 = parts[1].replace(/-/g, "+").replace(/_/g, "/");
    const json = atob(b64.padEnd(b64.length + ((4 - (b64.length % 4)) % 4), "="));
    const c = JSON.parse(json) as unknown;
    return c && typeof c === "object" ? (c as { sub?: string; exp?: number }) : null;
  } catch {
    return null;
  }
}

export function sessionFromToken(raw: string, via: Session["via"]): Session {
  const token = raw.trim().replace(/^Bearer\s+/i, "");
  const c = claims(token);
  return {
    token,
    via,
    subject: c?.email ?? c?.sub,
    expiresAt: typeof c?.exp === "number" ? c.exp * 1000 : undefined,
  };
}

export async function fetchConfig(): Promise<ConsoleConfig> {
  const r = await fetch("/console/config.json", { headers: { Accept: "application/json" } });
  if (!r.ok) throw new Error(`console configuration: HTTP ${r.status}`);
  return (await r.json()) as ConsoleConfig;
}

// The OIDC client: authorization code with PKCE as a public client. Its
// own state (the PKCE verifier between redirect and callback) is kept in
// sessionStorage too.
export function userManager(cfg: NonNullable<ConsoleConfig["oidc"]>): UserManager {
  return new UserManager({
    authority: cfg.issuer,
    client_id: cfg.clientId,
    redirect_uri: `${location.origin}/signin/callback`,
    response_type: "code",
    scope: cfg.scopes,
    loadUserInfo: false,
    automaticSilentRenew: false,
    userStore: new WebStorageStateStore({ store: sessionStorage }),
    stateStore: new WebStorageStateStore({ store: sessionStorage }),
  });
}
