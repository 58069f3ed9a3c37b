// The jobs list's filter: what the form holds, the API filter it becomes
// (internal/api/filter.go's grammar), and the same test applied to jobs
// that a watch reports, so a job leaves the list when it stops matching.
import type { Job } from "./api/types";

export interface JobFilter {
  state: string; // "" or a short state name, e.g. RUNNING
  labels: string; // team=nlp, sweep (has the label)
  creator: string;
}

export const emptyFilter: JobFilter = { state: "", labels: "", creator: "" };

interface LabelTerm {
  key: string;
  value?: string;
}

function labelTerms(s: string): LabelTerm[] {
  return s
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean)
    .map((t) => {
      const eq = t.indexOf("=");
      return eq < 0 ? { key: t } : { key: t.slice(0, eq).trim(), value: t.slice(eq + 1).trim() };
    });
}

export function filterExpr(f: JobFilter): string {
  const terms: string[] = [];
  if (f.state) terms.push(`state = ${f.state}`);
  for (const l of labelTerms(f.labels)) {
    terms.push(l.value === undefined ? `labels.${l.key}:*` : `labels.${l.key} = ${JSON.stringify(l.value)}`);
  }
  if (f.creator.trim()) terms.push(`creator = ${JSON.stringify(f.creator.trim())}`);
  return terms.join(" AND ");
}

export function matches(f: JobFilter, j: Job): boolean {
  if (f.state && j.status?.state !== `JOB_STATE_${f.state}`) return false;
  for (const l of labelTerms(f.labels)) {
    const v = j.labels?.[l.key];
    if (v === undefined || (l.value !== undefined && v !== l.value)) return false;
  }
  return !f.creator.trim() || j.creator === f.creator.trim();
}
