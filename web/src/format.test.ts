import { describe, expect, it } from "vitest";
import type { Job } from "./api/types";
import { displayState } from "./format";

describe("displayState", () => {
  it("shows SUSPENDING while a suspension is under way, SUSPENDED once done", () => {
    expect(displayState({ status: { state: "JOB_STATE_RUNNING", suspendRequested: true } } as Job)).toBe("SUSPENDING");
    expect(displayState({ status: { state: "JOB_STATE_SUSPENDED", suspendRequested: true } } as Job)).toBe("SUSPENDED");
    expect(displayState({ status: { state: "JOB_STATE_RUNNING", cancelRequested: true, suspendRequested: true } } as Job)).toBe("CANCELLING");
  });
});
