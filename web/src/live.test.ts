import { describe, expect, it } from "vitest";
import type { Job } from "./api/types";
import { ApiError } from "./api/client";
import { afterWatchError, freshest, newer } from "./live";

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

describe("watch errors", () => {
  it("lists again when the position is older than the events kept, stops when refused, else retries", () => {
    expect(afterWatchError(new ApiError(400, "afterEventId: events up to position 5 were deleted", [], 11))).toBe("relist");
    expect(afterWatchError(new ApiError(400, "filter: bad", [], 3))).toBe("retry");
    expect(afterWatchError(new ApiError(401, "expired", [], 16))).toBe("stop");
    expect(afterWatchError(new ApiError(403, "no", [], 7))).toBe("stop");
    expect(afterWatchError(new ApiError(404, "gone", [], 5))).toBe("stop");
    expect(afterWatchError(new ApiError(503, "later", [], 14))).toBe("retry");
    expect(afterWatchError(new TypeError("network"))).toBe("retry");
  });
});
