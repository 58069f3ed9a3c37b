import { describe, expect, it } from "vitest";
import { parseJobFile, splitPath } from "./jobfile";

// tyctl's example job file must mean the same here as in tyctl.
import mnist from "../../cmd/tyctl/examples/mnist.yaml?raw";

describe("parseJobFile", () => {
  it("reads tyctl's example as tyctl does", () => {
    const p = parseJobFile(mnist);
    expect(p.problems).toEqual([]);
    const spec = p.job?.spec as { replicas: Record<string, unknown>[]; runPolicy: Record<string, unknown>; successPolicy: string };
    expect(spec.replicas.map((r) => r.type)).toEqual(["REPLICA_TYPE_CHIEF", "REPLICA_TYPE_WORKER", "REPLICA_TYPE_PS"]);
    expect(spec.replicas[1]?.restartPolicy).toBe("RESTART_POLICY_EXIT_CODE");
    expect(spec.replicas[0]?.args).toContain("10"); // a number where a string is due
    expect((spec.replicas[0]?.resources as { cpu: unknown }).cpu).toBe("2");
    expect(spec.runPolicy.cleanPodPolicy).toBe("CLEAN_POD_POLICY_RUNNING");
    expect(spec.successPolicy).toBe("SUCCESS_POLICY_CHIEF_OR_WORKER0");
  });

  it("puts each problem on the line of its field", () => {
    const text = ["spec:", "  replicas:", "    - type: worker", "      image: tf", "      resources:", "        gpus: 4", "      restart_policy: sometimes"].join("\n");
    const p = parseJobFile(text);
    expect(p.problems).toEqual([
      { path: "spec.replicas[0].resources.gpus", message: "unknown field (did you mean gpu?)", line: 6 },
      { path: "spec.replicas[0].restart_policy", message: expect.stringContaining('"sometimes" is not one of NEVER, ON_FAILURE'), line: 7 },
    ]);
  });

  it("locates the server's field violations", () => {
    const p = parseJobFile(mnist);
    const line = p.locate("spec.replicas[1].resources.gpu");
    expect(mnist.split("\n")[(line ?? 0) - 1]).toMatch(/^\s+gpu: 1$/);
    expect(p.locate('labels["team"]')).toBe(mnist.split("\n").findIndex((l) => l.startsWith("  team:")) + 1);
  });

  it("reports YAML syntax errors with their line", () => {
    const p = parseJobFile("spec:\n  replicas: [\n");
    expect(p.problems.length).toBeGreaterThan(0);
    expect(p.problems[0]?.line).toBeGreaterThan(0);
  });

  it("recognises a Kubeflow TFJob", () => {
    expect(parseJobFile("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: x}\n").tfjob).toBe(true);
  });
});

describe("splitPath", () => {
  it("splits fields, indexes and quoted keys", () => {
    expect(splitPath('job.spec.replicas[2].podLabels["a.b/c"]')).toEqual(["spec", "replicas", 2, "podLabels", "a.b/c"]);
  });
});
