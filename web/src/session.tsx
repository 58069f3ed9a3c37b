// The session context: who is signed in, the API client that carries
// their token, and what happens when the token runs out.
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { Api } from "./api/client";
import { fetchConfig, loadSession, saveSession, type ConsoleConfig, type Session } from "./auth";

// A token's last minute: warn, so that nobody loses a half-written job
// to a silent sign-out.
const warnBefore = 60_000;

interface SessionState {
  config?: ConsoleConfig;
  configError?: string;
  session: Session | null;
  api: Api;
  // Why the last session ended ("expired"), shown on the sign-in page.
  notice?: string;
  expiringSoon: boolean;
  signIn: (s: Session) => void;
  signOut: (notice?: string) => void;
}

const Ctx = createContext<SessionState | null>(null);

export function useSession(): SessionState {
  const s = useContext(Ctx);
  if (!s) throw new Error("useSession outside SessionProvider");
  return s;
}

export const expiredNotice = "Your session has expired. Sign in again to continue.";

export function SessionProvider({ children }: { children: ReactNode }) {
  const [config, setConfig] = useState<ConsoleConfig>();
  const [configError, setConfigError] = useState<string>();
  const [session, setSession] = useState<Session | null>(() => loadSession());
  const [notice, setNotice] = useState<string>();
  const [expiringSoon, setExpiringSoon] = useState(false);
  const tokenRef = useRef(session?.token);

  useEffect(() => {
    fetchConfig().then(setConfig, (e: Error) => setConfigError(e.message));
  }, []);

  const signOut = useCallback((why?: string) => {
    tokenRef.current = undefined;
    saveSession(null);
    setSession(null);
    setNotice(why);
    setExpiringSoon(false);
  }, []);

  const signIn = useCallback((s: Session) => {
    tokenRef.current = s.token;
    saveSession(s);
    setSession(s);
    setNotice(undefined);
  }, []);

  // One client for the whole app; it reads the token at each call, and a
  // 401 anywhere ends the session with a prompt to sign in again.
  const api = useMemo(
    () => new Api(() => tokenRef.current, () => {
      if (tokenRef.current) signOut(expiredNotice);
    }),
    [signOut],
  );

  useEffect(() => {
    const exp = session?.expiresAt;
    if (!exp) return;
    const warn = window.setTimeout(() => setExpiringSoon(true), Math.max(0, exp - warnBefore - Date.now()));
    const end = window.setTimeout(() => signOut(expiredNotice), Math.max(0, exp - Date.now()));
    return () => {
      window.clearTimeout(warn);
      window.clearTimeout(end);
    };
  }, [session, signOut]);

  const value = useMemo(
    () => ({ config, configError, session, api, notice, expiringSoon, signIn, signOut }),
    [config, configError, session, api, notice, expiringSoon, signIn, signOut],
  );
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}
