import { describe, expect, it } from "vitest";
import type { Job } from "./api/types";
import { freshest, newer } from "./live";

describe("live list", () => {
  const job = (name: string, state: Job["status"], updateTime: string): Job => ({ name, status: state, updateTime });
  it("orders reads by instant, whatever their fractional digits", () => {
    expect(newer(job("a", {}, "2026-12-02T17:44:27.9Z"), job("a", {}, "2026-12-02T17:44:27.929Z"))).toBe(false);
    expect(newer(job("a", {}, "2026-12-02T17:44:28Z"), job("a", {}, "2026-12-02T17:44:27.929Z"))).toBe(true);
  });
  it("keeps what the watch delivered after the list was read", () => {
    const shown = [job("a", { state: "JOB_STATE_STARTING" }, "2026-12-02T17:44:27.929Z"), job("b", {}, "2026-12-02T17:40:00Z")];
    const read = [
      job("a", { state: "JOB_STATE_QUEUED" }, "2026-12-02T17:44:20Z"),
      job("b", { state: "JOB_STATE_RUNNING" }, "2026-12-02T17:44:00Z"),
      job("c", {}, "2026-12-02T17:44:00Z"),
    ];
    const got = freshest(read, shown);
    expect(got.map((j) => j.status?.state)).toEqual(["JOB_STATE_STARTING", "JOB_STATE_RUNNING", undefined]);
    expect(got.map((j) => j.name)).toEqual(["a", "b", "c"]);
    expect(freshest(read, undefined)).toBe(read);
  });
});
