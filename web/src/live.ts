// Live updates: a tenant's job watch (REST jobs:watch, newline-delimited
// JSON), resumed after the last event id whenever the stream ends (the
// server ends every stream after --max-stream-lifetime).
import { useEffect, useRef } from "react";
import { ApiError, paths, type Api } from "./api/client";
import type { WatchJobResponse } from "./api/types";

// onOpen runs at the first message of each new (not resumed) watch, and
// 1.5 s after it was asked for: from then on nothing is missed, so a list
// read now is complete.
export function useJobWatch(api: Api, tenant: string, onMessage: (m: WatchJobResponse) => void, onOpen: () => void) {
  const handlers = useRef({ onMessage, onOpen });
  useEffect(() => {
    handlers.current = { onMessage, onOpen };
  });
  useEffect(() => {
    const ctl = new AbortController();
    let after = "0";
    void (async () => {
      let failures = 0;
      while (!ctl.signal.aborted) {
        let first = after === "0";
        // A watch "from now" takes its starting point as the request
        // arrives, and the REST gateway answers only with the first
        // message, which may be long in coming: the list read at page load
        // may predate it, and a change in between would be lost until
        // then. Read the list again once the watch has surely begun.
        const settle = first ? window.setTimeout(() => handlers.current.onOpen(), 1500) : undefined;
        try {
          await api.lines<WatchJobResponse>(
            `${paths.jobs(tenant)}:watch?afterEventId=${after}`,
            (m) => {
              if (m.event?.id) after = m.event.id;
              failures = 0;
              handlers.current.onMessage(m);
              if (first) {
                first = false;
                handlers.current.onOpen();
              }
            },
            ctl.signal,
          );
        } catch (e) {
          window.clearTimeout(settle);
          if (ctl.signal.aborted) return;
          // Signed out, or not allowed: no point in retrying.
          if (e instanceof ApiError && (e.status === 401 || e.status === 403 || e.status === 404)) return;
          failures++;
        }
        // Back off a little between reconnects after failures.
        await new Promise((r) => setTimeout(r, Math.min(1000 * 2 ** failures, 15_000) * (failures ? 1 : 0.1)));
      }
    })();
    return () => ctl.abort();
  }, [api, tenant]);
}
