import { describe, expect, it } from "vitest";
import type { Job } from "./api/types";
import { filterExpr, matches } from "./filter";

describe("job filter", () => {
  const f = { state: "RUNNING", labels: "team=nlp, sweep", creator: "alice" };
  it("writes the API's filter", () => {
    expect(filterExpr(f)).toBe('state = RUNNING AND labels.team = "nlp" AND labels.sweep:* AND creator = "alice"');
    expect(filterExpr({ state: "", labels: "", creator: "" })).toBe("");
  });
  it("matches jobs as the API does", () => {
    const j: Job = { name: "tenants/t/jobs/a", creator: "alice", labels: { team: "nlp", sweep: "1" }, status: { state: "JOB_STATE_RUNNING" } };
    expect(matches(f, j)).toBe(true);
    expect(matches(f, { ...j, creator: "bob" })).toBe(false);
    expect(matches(f, { ...j, labels: { team: "nlp" } })).toBe(false);
    expect(matches(f, { ...j, status: { state: "JOB_STATE_QUEUED" } })).toBe(false);
  });
});
