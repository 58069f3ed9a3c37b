// Live updates: a tenant's job watch (REST jobs:watch, newline-delimited
// JSON), resumed after the last event id whenever the stream ends (the
// server ends every stream after --max-stream-lifetime).
import { useEffect, useRef } from "react";
import { ApiError, codeOutOfRange, paths, type Api } from "./api/client";
import type { Job, WatchJobResponse } from "./api/types";

// newer reports whether a is a later read of a job than b (by updateTime;
// compared as instants: the API writes 0, 3, 6 or 9 fractional digits).
export function newer(a: Job, b: Job): boolean {
  return (Date.parse(a.updateTime ?? "") || 0) > (Date.parse(b.updateTime ?? "") || 0);
}

// freshest is a list page as read, with each job the watch has already
// delivered a later read of kept as shown: a list request sent before a
// change and answered after the watch brought it would otherwise put the
// job back in its earlier state.
export function freshest(read: Job[], shown: Job[] | undefined): Job[] {
  if (!shown) return read;
  const byName = new Map(shown.map((j) => [j.name, j]));
  return read.map((j) => {
    const s = byName.get(j.name);
    return s && newer(s, j) ? s : j;
  });
}

// afterWatchError says what a watch does once its stream failed with e:
// stop (signed out, not allowed, no such tenant), relist (its position is
// older than the events the server keeps: only a new list and a watch from
// that list's position miss nothing), or retry from where it got to.
export function afterWatchError(e: unknown): "stop" | "relist" | "retry" {
  if (!(e instanceof ApiError)) return "retry";
  if (e.status === 401 || e.status === 403 || e.status === 404) return "stop";
  if (e.code === codeOutOfRange) return "relist";
  return "retry";
}

// useJobWatch follows a tenant's jobs from `from`, the watchAfterEventId
// of the list the page first read (undefined: not read yet, nothing
// starts), so that no change between that list and the watch is lost; it
// resumes after the last event whenever the stream ends. When the server
// no longer keeps the events after that position (event retention, after
// a long sleep of the laptop), it stops and calls onExpired: the page
// lists again and gives a new `from`.
export function useJobWatch(
  api: Api,
  tenant: string,
  from: string | undefined,
  onMessage: (m: WatchJobResponse) => void,
  onExpired: () => void,
) {
  const handler = useRef(onMessage);
  const expired = useRef(onExpired);
  useEffect(() => {
    handler.current = onMessage;
    expired.current = onExpired;
  });
  useEffect(() => {
    if (from === undefined) return;
    const ctl = new AbortController();
    let after = from;
    void (async () => {
      let failures = 0;
      while (!ctl.signal.aborted) {
        try {
          await api.lines<WatchJobResponse>(
            `${paths.jobs(tenant)}:watch?afterEventId=${after}`,
            (m) => {
              if (m.event?.id) after = m.event.id;
              failures = 0;
              handler.current(m);
            },
            ctl.signal,
          );
        } catch (e) {
          if (ctl.signal.aborted) return;
          const next = afterWatchError(e);
          if (next === "stop") return;
          if (next === "relist") {
            expired.current();
            return;
          }
          failures++;
        }
        // Back off a little between reconnects after failures.
        await new Promise((r) => setTimeout(r, Math.min(1000 * 2 ** failures, 15_000) * (failures ? 1 : 0.1)));
      }
    })();
    return () => ctl.abort();
  }, [api, tenant, from]);
}
