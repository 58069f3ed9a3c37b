import { describe, expect, it } from "vitest";
import type { JobEvent, UsageRow } from "./api/types";
import { budgetPace, capacityAt, groupKey, jobTimeline, queueSeries, stackUsage, utilizationSeries } from "./charts";

const row = (start: string, gpuHours: number, extra: Partial<UsageRow> = {}): UsageRow => ({ start, gpuHours, tenant: "vision", ...extra });

describe("stackUsage", () => {
  it("fills every bucket of the window, averages GPUs per bucket and stacks the largest group lowest", () => {
    const rows = [
      row("2026-12-07T00:00:00Z", 2, { creator: "alice" }),
      row("2026-12-07T00:00:00Z", 1, { creator: "bob" }),
      row("2026-12-07T02:00:00Z", 4, { creator: "alice", gpuHoursIdle: 1.5 }),
      row("2026-12-07T02:00:00Z", 0.5, { creator: "" }),
    ];
    const s = stackUsage(rows, "2026-12-07T00:00:00Z", "2026-12-07T03:00:00Z", "1h", "creator");
    const t0 = Date.parse("2026-12-07T00:00:00Z") / 1000;
    expect(s.xs).toEqual([t0, t0 + 3600, t0 + 7200]);
    expect(s.groups).toEqual(["alice", "bob", "(no creator)"]);
    expect(s.values).toEqual([[2, 0, 4], [1, 0, 0], [0, 0, 0.5]]);
    expect(s.stacked).toEqual([[2, 0, 4], [3, 0, 4], [3, 0, 4.5]]);
    expect(s.totals).toEqual([6, 1, 0.5]);
    expect(s.idle).toEqual([1.5, 0, 0]);
  });

  it("shows daily GPU-hours as the GPUs held on average that day", () => {
    const rows = [row("2026-12-05T00:00:00Z", 48, { labels: { team: "nlp" } }), row("2026-12-06T00:00:00Z", 12, { labels: {} })];
    const s = stackUsage(rows, "2026-12-05T00:00:00Z", "2026-12-07T00:00:00Z", "1d", "label:team");
    expect(s.groups).toEqual(["nlp", "(no team)"]);
    expect(s.values).toEqual([[2, 0], [0, 0.5]]);
    expect(s.totals).toEqual([48, 12]);
  });

  it("groups by tenant without a grouping, and drops rows outside the window", () => {
    const rows = [row("2026-12-07T00:00:00Z", 1, { tenant: "a" }), row("2026-12-07T00:00:00Z", 3, { tenant: "b" }), row("2026-12-08T00:00:00Z", 9, { tenant: "c" })];
    const s = stackUsage(rows, "2026-12-07T00:00:00Z", "2026-12-07T01:00:00Z", "1h", "");
    expect(s.groups).toEqual(["b", "a"]);
    expect(s.stacked).toEqual([[3], [4]]);
  });

  it("averages the bucket under way over its elapsed part", () => {
    const rows = [row("2026-12-07T00:00:00Z", 2), row("2026-12-07T01:00:00Z", 1)];
    const s = stackUsage(rows, "2026-12-07T00:00:00Z", "2026-12-07T02:00:00Z", "1h", "", Date.parse("2026-12-07T01:15:00Z"));
    expect(s.values).toEqual([[2, 4]]); // 1 GPU-hour in 15 minutes: 4 GPUs
    expect(s.totals).toEqual([3]);
  });

  it("names a row's group", () => {
    expect(groupKey(row("x", 0, { creator: "carol" }), "creator")).toBe("carol");
    expect(groupKey(row("x", 0, { labels: { team: "" } }), "label:team")).toBe("(no team)");
  });
});

describe("budgetPace", () => {
  it("spreads the budget over the period's hours", () => {
    expect(budgetPace(undefined, new Date())).toBeUndefined();
    expect(budgetPace({ gpuHours: 720, period: "BUDGET_PERIOD_ROLLING_30D" }, new Date())).toBe(1);
    // February 2027 has 28 days.
    expect(budgetPace({ gpuHours: 672, period: "BUDGET_PERIOD_MONTH" }, new Date("2027-02-10T00:00:00Z"))).toBe(1);
  });
});

describe("jobTimeline", () => {
  const ev = (id: number, at: string, reason: string, state?: JobEvent["state"], type = "Normal"): JobEvent => ({
    id: String(id), createTime: `2026-12-07T10:${at}Z`, reason, state, type, message: "",
  });
  const ms = (at: string) => Date.parse(`2026-12-07T10:${at}Z`);

  it("cuts the job's life into states and marks admissions, restarts, preemptions and the end", () => {
    const events = [
      ev(1, "00:00", "Submitted", "JOB_STATE_QUEUED"),
      ev(2, "01:00", "Admitted", "JOB_STATE_STARTING"),
      ev(3, "02:00", "JobRunning", "JOB_STATE_RUNNING"),
      ev(4, "03:00", "Restarting", "JOB_STATE_RESTARTING"),
      ev(5, "03:30", "JobRunning", "JOB_STATE_RUNNING"),
      ev(6, "04:00", "Preempted", "JOB_STATE_QUEUED", "Warning"),
      ev(7, "05:00", "Admitted", "JOB_STATE_STARTING"),
      ev(8, "05:10", "ContainersStarting", "JOB_STATE_STARTING"),
      ev(9, "06:00", "JobRunning", "JOB_STATE_RUNNING"),
      ev(10, "07:00", "JobSucceeded", "JOB_STATE_SUCCEEDED"),
      ev(11, "08:00", "Deleted", "JOB_STATE_SUCCEEDED"),
    ];
    const tl = jobTimeline(events, ms("09:00"));
    expect(tl.segments.map((s) => [s.state, s.start, s.end])).toEqual([
      ["QUEUED", ms("00:00"), ms("01:00")],
      ["STARTING", ms("01:00"), ms("02:00")],
      ["RUNNING", ms("02:00"), ms("03:00")],
      ["RESTARTING", ms("03:00"), ms("03:30")],
      ["RUNNING", ms("03:30"), ms("04:00")],
      ["QUEUED", ms("04:00"), ms("05:00")],
      ["STARTING", ms("05:00"), ms("06:00")],
      ["RUNNING", ms("06:00"), ms("07:00")],
      ["SUCCEEDED", ms("07:00"), ms("07:00")],
    ]);
    expect(tl.markers.map((m) => [m.kind, m.time])).toEqual([
      ["admitted", ms("01:00")], ["restart", ms("03:00")], ["preempted", ms("04:00")], ["admitted", ms("05:00")], ["end", ms("07:00")],
    ]);
    expect([tl.start, tl.end]).toEqual([ms("00:00"), ms("07:00")]);
  });

  it("runs a living job's last state up to now, and marks warnings", () => {
    const tl = jobTimeline([ev(1, "00:00", "Submitted", "JOB_STATE_QUEUED"), ev(2, "00:30", "Unschedulable", undefined, "Warning")], ms("02:00"));
    expect(tl.segments).toEqual([{ state: "QUEUED", start: ms("00:00"), end: ms("02:00") }]);
    expect(tl.markers.map((m) => m.kind)).toEqual(["warning"]);
    expect(jobTimeline([], 5)).toEqual({ segments: [], markers: [], start: 5, end: 5 });
  });
});

describe("queueSeries", () => {
  it("fills every bucket, sums tenants' jobs and keeps the longest wait, in minutes", () => {
    const t0 = Date.parse("2026-12-07T00:00:00Z") / 1000;
    const s = queueSeries([
      { start: "2026-12-07T00:00:00Z", tenant: "a", pendingJobsMean: 1.5, pendingJobsMax: 3, oldestWaitSecondsMax: 600, oldestWaitSecondsMean: 300 },
      { start: "2026-12-07T00:00:00Z", tenant: "b", pendingJobsMean: 0.5, pendingJobsMax: 1, oldestWaitSecondsMax: 120, oldestWaitSecondsMean: 60 },
      { start: "2026-12-07T02:00:00Z", tenant: "b", pendingJobsMean: 2, pendingJobsMax: 2, oldestWaitSecondsMax: 60 },
      { start: "2026-12-06T00:00:00Z", tenant: "a", pendingJobsMean: 9, pendingJobsMax: 9 },
    ], "2026-12-07T00:00:00Z", "2026-12-07T03:00:00Z", 3600);
    expect(s.xs).toEqual([t0, t0 + 3600, t0 + 7200]);
    expect(s.jobsMean).toEqual([2, 0, 2]);
    expect(s.jobsMax).toEqual([4, 0, 2]);
    expect(s.waitMaxMinutes).toEqual([10, 0, 1]);
    expect(s.waitMeanMinutes).toEqual([5, 0, 0]);
  });
});

describe("capacityAt", () => {
  it("lays capacity samples on the buckets, null where none fell", () => {
    const t0 = Date.parse("2026-12-07T00:00:00Z") / 1000;
    expect(capacityAt([{ start: "2026-12-07T01:00:00Z", gpus: "64" }], [t0, t0 + 3600])).toEqual([null, 64]);
  });
});

describe("utilizationSeries", () => {
  it("aligns series on the union of their times and names a replica's GPUs when it has several", () => {
    const s = utilizationSeries([
      { replica: "worker-0", gpu: "GPU-8c6b2f1a-0000", points: [{ time: "2026-12-07T00:00:00Z", utilization: 80 }, { time: "2026-12-07T00:00:30Z", utilization: 85 }] },
      { replica: "worker-0", gpu: "GPU-11111111-0000", points: [{ time: "2026-12-07T00:00:30Z", utilization: 70 }] },
      { replica: "worker-1", gpu: "0", points: [{ time: "2026-12-07T00:01:00Z", utilization: 0 }] },
    ]);
    const t0 = Date.parse("2026-12-07T00:00:00Z") / 1000;
    expect(s.xs).toEqual([t0, t0 + 30, t0 + 60]);
    expect(s.labels).toEqual(["worker-0 GPU-8c6b2f1a", "worker-0 GPU-11111111", "worker-1"]);
    expect(s.values).toEqual([[80, 85, null], [null, 70, null], [null, null, 0]]);
  });
});
