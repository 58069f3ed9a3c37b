import { useMemo } from "react";
import type { JobEvent } from "../api/types";
import { jobTimeline } from "../charts";
import { duration, localTime } from "../format";

// JobTimeline draws a job's life from its events as one bar: a segment
// per state, as long as the job stayed in it, and marks for admissions,
// restarts, preemptions, suspensions and the end. Plain CSS: one row of
// intervals reads better as a bar than as a plot (uPlot draws series
// over an x axis, not a Gantt row).
export function JobTimeline({ events, now }: { events: JobEvent[]; now: number }) {
  const tl = useMemo(() => jobTimeline(events, now), [events, now]);
  if (tl.segments.length === 0) return null;
  const span = Math.max(tl.end - tl.start, 1);
  const at = (t: number) => `${(((t - tl.start) / span) * 100).toFixed(3)}%`;
  return (
    <figure className="jobline" aria-label="Timeline of the job">
      <div className="jobline-bar">
        {tl.segments.map((s, i) => (
          <div
            key={i}
            className={`jobline-seg seg-${s.state.toLowerCase()}`}
            style={{ left: at(s.start), width: `max(3px, ${(((s.end - s.start) / span) * 100).toFixed(3)}%)` }}
            title={`${s.state} ${localTime(new Date(s.start).toISOString())}, ${duration(s.end - s.start)}`}
            data-state={s.state}
          />
        ))}
        {tl.markers.map((m, i) => (
          <span
            key={i}
            className={`jobline-mark mark-${m.kind}`}
            style={{ left: at(m.time) }}
            title={`${m.reason} ${localTime(new Date(m.time).toISOString())}${m.message ? `: ${m.message}` : ""}`}
            data-kind={m.kind}
          />
        ))}
      </div>
      <figcaption className="jobline-axis">
        <time dateTime={new Date(tl.start).toISOString()}>{localTime(new Date(tl.start).toISOString())}</time>
        <span>{duration(tl.end - tl.start)}</span>
        <time dateTime={new Date(tl.end).toISOString()}>{localTime(new Date(tl.end).toISOString())}</time>
      </figcaption>
      <ul className="jobline-legend">
        {[...new Set(tl.segments.map((s) => s.state))].map((s) => (
          <li key={s}><span className={`jobline-key seg-${s.toLowerCase()}`} /> {s.toLowerCase()}</li>
        ))}
        {[...new Set(tl.markers.map((m) => m.kind))].map((k) => (
          <li key={k}><span className={`jobline-key jobline-mark jobline-mark-key mark-${k}`} /> {k}</li>
        ))}
      </ul>
    </figure>
  );
}
