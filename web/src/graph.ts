// The dependency graph around a job (spec.dependsOn), laid out for the job
// page: the jobs connected to it through dependencies, each in the column
// of its longest path from a job that depends on nothing shown, rows in
// submission order within a column. Pure, so it is tested without a DOM.

import type { Job } from "./api/types";

export interface GraphNode {
  id: string;
  job?: Job; // unset: a dependency not among the jobs read (deleted, or older)
  col: number;
  row: number;
}

export interface GraphEdge {
  from: string; // the dependency
  to: string; // the dependent
  condition: string; // SUCCEEDED, FINISHED, STARTED
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

const idOf = (j: Job) => j.name.slice(j.name.lastIndexOf("/") + 1);

// dependencyGraph is the connected part of jobs' dependency graph that
// holds the job named id; empty when it has no dependency and no
// dependent. At most limit nodes, the closest first.
export function dependencyGraph(id: string, jobs: Job[], limit = 40): Graph {
  const byId = new Map(jobs.map((j) => [idOf(j), j]));
  const edges: GraphEdge[] = [];
  for (const j of jobs) {
    for (const d of j.spec?.dependsOn ?? []) {
      const cond = (d.condition ?? "DEPENDENCY_CONDITION_SUCCEEDED").replace("DEPENDENCY_CONDITION_", "");
      edges.push({ from: d.job ?? "", to: idOf(j), condition: cond === "UNSPECIFIED" ? "SUCCEEDED" : cond });
    }
  }
  // The component, breadth first from the job.
  const seen = new Set([id]);
  const queue = [id];
  while (queue.length && seen.size < limit) {
    const cur = queue.shift()!;
    for (const e of edges) {
      const next = e.from === cur ? e.to : e.to === cur ? e.from : undefined;
      if (next !== undefined && !seen.has(next) && seen.size < limit) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  const inGraph = edges.filter((e) => seen.has(e.from) && seen.has(e.to));
  if (inGraph.length === 0) return { nodes: [], edges: [] };
  // Columns: the longest path from a root. Dependencies exist before their
  // dependents, so there is no cycle; the bound guards against bad data.
  const col = new Map<string, number>([...seen].map((n) => [n, 0]));
  for (let pass = 0; pass < seen.size; pass++) {
    let changed = false;
    for (const e of inGraph) {
      if (col.get(e.to)! < col.get(e.from)! + 1) {
        col.set(e.to, col.get(e.from)! + 1);
        changed = true;
      }
    }
    if (!changed) break;
  }
  const created = (n: string) => byId.get(n)?.createTime ?? "";
  const ordered = [...seen].sort((a, b) => col.get(a)! - col.get(b)! || created(a).localeCompare(created(b)) || a.localeCompare(b));
  const rows = new Map<number, number>();
  const nodes = ordered.map((n) => {
    const c = col.get(n)!;
    const row = rows.get(c) ?? 0;
    rows.set(c, row + 1);
    return { id: n, job: byId.get(n), col: c, row };
  });
  return { nodes, edges: inGraph };
}
