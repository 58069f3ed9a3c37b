import { useEffect, useRef, useState, type FormEvent } from "react";
import { useLocation, useNavigate } from "react-router";
import { sessionFromToken, userManager } from "../auth";
import { useSession } from "../session";

// SignIn offers what the server allows: the OIDC issuer (authorization
// code with PKCE), and with dev auth a field to paste a token.
export function SignIn() {
  const { config, configError, notice, signIn } = useSession();
  const [token, setToken] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const location = useLocation();
  const navigate = useNavigate();
  const from = (location.state as { from?: string } | null)?.from ?? "/";

  async function submitToken(e: FormEvent) {
    e.preventDefault();
    setError(undefined);
    const s = sessionFromToken(token, "token");
    if (!s.token) {
      setError("Paste a token.");
      return;
    }
    if (s.expiresAt && s.expiresAt <= Date.now()) {
      setError("This token has expired.");
      return;
    }
    setBusy(true);
    // Try it before keeping it: a token the server refuses is no session.
    try {
      const r = await fetch("/v1/tenants?pageSize=1", { headers: { Authorization: `Bearer ${s.token}` }, cache: "no-store" });
      if (r.status === 401) {
        setError("The server did not accept this token.");
        return;
      }
    } catch {
      setError("The server cannot be reached.");
      return;
    } finally {
      setBusy(false);
    }
    signIn(s);
    navigate(from, { replace: true });
  }

  async function oidc() {
    if (!config?.oidc) return;
    setError(undefined);
    try {
      await userManager(config.oidc).signinRedirect({ state: { from } });
    } catch (e) {
      setError(`Signing in with ${config.oidc.issuer} failed: ${(e as Error).message}`);
    }
  }

  return (
    <main id="main" className="signin">
      <h1>Sign in to Trainyard</h1>
      {notice && <p role="alert" className="notice">{notice}</p>}
      {configError && <p role="alert" className="error">{configError}</p>}
      {config?.oidc && (
        <p>
          <button type="button" className="primary" onClick={() => void oidc()}>
            Sign in with your identity provider
          </button>
        </p>
      )}
      {config?.tokenSignIn && (
        <form onSubmit={(e) => void submitToken(e)} aria-label="Sign in with a token">
          <label htmlFor="token">Token</label>
          <input
            id="token"
            name="token"
            type="password"
            autoComplete="off"
            spellCheck={false}
            value={token}
            onChange={(e) => setToken(e.target.value)}
            aria-describedby="token-help"
          />
          <p id="token-help" className="help">
            A bearer token the server accepts: with <code>trainyard dev</code>, the one it printed as <code>export TOKEN=…</code>.
            It is kept in this tab only.
          </p>
          <button type="submit" className="primary" disabled={busy}>Sign in</button>
        </form>
      )}
      {config && !config.oidc && !config.tokenSignIn && (
        <p className="error">This server offers no way to sign in to the console: start it with --oidc-issuer and --console-client-id, or --dev-auth.</p>
      )}
      {error && <p role="alert" className="error">{error}</p>}
    </main>
  );
}

// SignInCallback finishes the OIDC redirect: it redeems the code (with the
// PKCE verifier kept in sessionStorage), keeps the ID token, and removes
// the code from the address bar.
export function SignInCallback() {
  const { config, signIn } = useSession();
  const navigate = useNavigate();
  const [error, setError] = useState<string>();
  const done = useRef(false);

  useEffect(() => {
    if (!config?.oidc || done.current) return;
    done.current = true;
    userManager(config.oidc)
      .signinRedirectCallback()
      .then((user) => {
        if (!user.id_token) throw new Error("the issuer returned no ID token");
        signIn(sessionFromToken(user.id_token, "oidc"));
        const from = (user.state as { from?: string } | undefined)?.from ?? "/";
        navigate(from, { replace: true });
      })
      .catch((e: Error) => setError(e.message));
  }, [config, signIn, navigate]);

  return (
    <main id="main" className="signin">
      <h1>Signing in…</h1>
      {error && (
        <p role="alert" className="error">
          Sign-in failed: {error}. <a href="/signin">Try again</a>
        </p>
      )}
    </main>
  );
}
