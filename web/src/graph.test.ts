import { describe, expect, it } from "vitest";
import type { Job } from "./api/types";
import { dependencyGraph } from "./graph";

const job = (id: string, created: string, ...deps: [string, string?][]): Job => ({
  name: `tenants/ml/jobs/${id}`,
  createTime: created,
  spec: { dependsOn: deps.map(([job, condition]) => ({ job, condition: condition as never })) },
});

describe("dependencyGraph", () => {
  const jobs = [
    job("prep", "1"),
    job("train", "2", ["prep"]),
    job("eval", "3", ["train", "DEPENDENCY_CONDITION_STARTED"]),
    job("publish", "4", ["train"], ["eval", "DEPENDENCY_CONDITION_FINISHED"]),
    job("other", "5"),
  ];

  it("lays out the chain around any of its jobs in columns", () => {
    for (const id of ["prep", "eval", "publish"]) {
      const g = dependencyGraph(id, jobs);
      expect(g.nodes.map((n) => [n.id, n.col, n.row])).toEqual([
        ["prep", 0, 0], ["train", 1, 0], ["eval", 2, 0], ["publish", 3, 0],
      ]);
      expect(g.edges).toContainEqual({ from: "train", to: "eval", condition: "STARTED" });
      expect(g.edges).toContainEqual({ from: "prep", to: "train", condition: "SUCCEEDED" });
    }
  });

  it("is empty for a job on its own", () => {
    expect(dependencyGraph("other", jobs)).toEqual({ nodes: [], edges: [] });
  });

  it("shows a dependency that was not read, without its job", () => {
    const g = dependencyGraph("train", [job("train", "2", ["gone"])]);
    expect(g.nodes.map((n) => [n.id, n.job === undefined])).toEqual([["gone", true], ["train", false]]);
  });

  it("puts siblings in rows by submission", () => {
    const g = dependencyGraph("prep", [job("prep", "1"), job("b", "3", ["prep"]), job("a", "2", ["prep"])]);
    expect(g.nodes.map((n) => [n.id, n.col, n.row])).toEqual([["prep", 0, 0], ["a", 1, 0], ["b", 1, 1]]);
  });
});

describe("waitingFor a dependency", () => {
  it("names the job waited on", async () => {
    const { waitingFor } = await import("./format");
    const j: Job = { name: "tenants/ml/jobs/train", status: { state: "JOB_STATE_QUEUED", queue: { reason: "WAIT_REASON_DEPENDENCY", blockedBy: "prep" } } };
    expect(waitingFor(j)).toBe("dependency: on prep");
  });
});
