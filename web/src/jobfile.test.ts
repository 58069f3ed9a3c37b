import { describe, expect, it } from "vitest";
import { documentPath, readJobFile, splitPath } from "./jobfile";

// tyctl's example job file, the one the submit form starts with.
import mnist from "../../cmd/tyctl/examples/mnist.yaml?raw";

// The lenient rules are the server's (internal/jobfile, POST jobs:parse):
// what is tested here is only what the console does with a file's lines.
describe("readJobFile", () => {
  it("reads tyctl's example as YAML, leaving the rules to the server", () => {
    const p = readJobFile(mnist);
    expect(p.problems).toEqual([]);
    expect(p.tfjob).toBe(false);
    const spec = (p.value as { spec: { replicas: { type: string }[] } }).spec;
    expect(spec.replicas[0]?.type).toBe("CHIEF"); // as written: the server expands it
  });

  it("puts the server's violations on the line of their field", () => {
    const text = ["spec:", "  replicas:", "    - type: worker", "      image: tf", "      resources:", "        gpus: 4", "      restart_policy: sometimes"].join("\n");
    const p = readJobFile(text);
    expect(p.locate(documentPath("documents[0].spec.replicas[0].resources.gpus"))).toBe(6);
    expect(p.locate(documentPath("documents[0].spec.replicas[0].restartPolicy"))).toBe(7); // snake_case in the file
  });

  it("locates the create's field violations", () => {
    const p = readJobFile(mnist);
    const line = p.locate("spec.replicas[1].resources.gpu");
    expect(mnist.split("\n")[(line ?? 0) - 1]).toMatch(/^\s+gpu: 1$/);
    expect(p.locate('labels["team"]')).toBe(mnist.split("\n").findIndex((l) => l.startsWith("  team:")) + 1);
  });

  it("reports YAML syntax errors with their line, before sending", () => {
    const p = readJobFile("spec:\n  replicas: [\n");
    expect(p.problems.length).toBeGreaterThan(0);
    expect(p.problems[0]?.line).toBeGreaterThan(0);
  });

  it("recognises a Kubeflow TFJob", () => {
    expect(readJobFile("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: x}\n").tfjob).toBe(true);
  });
});

describe("documentPath", () => {
  it("drops the one document's index", () => {
    expect(documentPath("documents[0].spec.replicas[0].imagee")).toBe("spec.replicas[0].imagee");
    expect(documentPath("documents[0]")).toBe("");
    expect(documentPath("content")).toBe("");
    expect(documentPath("spec.replicas[1].image")).toBe("spec.replicas[1].image");
  });
});

describe("splitPath", () => {
  it("splits fields, indexes and quoted keys", () => {
    expect(splitPath('job.spec.replicas[2].podLabels["a.b/c"]')).toEqual(["spec", "replicas", 2, "podLabels", "a.b/c"]);
  });
});
