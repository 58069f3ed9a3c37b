// Job files: the Job resource as the REST API takes it in a create's body,
// in YAML or JSON. The console does not apply the lenient job-file rules
// (short enums, numbers where strings are due, unknown fields with a
// suggestion) itself: it sends the text to the server's ParseJobFile
// (POST .../jobs:parse, internal/jobfile), as tyctl and the Python client
// do, and creates the job that comes back.
//
// What stays here is reading the YAML for its lines: a syntax error is
// shown before anything is sent, a Kubeflow TFJob (kind: TFJob) goes to
// importTFJob as it is, and every problem — the server's field violations,
// "documents[0].spec.replicas[0].imagee" from the parse or
// "spec.replicas[1].resources.gpu" from the create — is placed on the line
// of the YAML that holds the field.
import { isMap, isSeq, LineCounter, parseDocument, type Node } from "yaml";

export interface Problem {
  path: string;
  message: string;
  line?: number; // 1-based
}

export interface Parsed {
  // The document as YAML reads it: the body of an importTFJob.
  value?: unknown;
  // YAML syntax errors, with their lines.
  problems: Problem[];
  // A Kubeflow TFJob manifest rather than a Trainyard job.
  tfjob?: boolean;
  locate: (path: string) => number | undefined;
}

export function readJobFile(text: string): Parsed {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false });
  const locate = (path: string) => locatePath(doc.contents as Node | null, lc, path);
  const problems: Problem[] = doc.errors.map((e) => ({
    path: "",
    message: e.message.split("\n")[0] ?? e.message,
    line: lc.linePos(e.pos[0]).line,
  }));
  if (problems.length > 0) return { problems, locate };
  const value: unknown = doc.toJS();
  const obj = isObject(value) ? value : {};
  const tfjob = obj.kind === "TFJob" && typeof obj.apiVersion === "string" && obj.apiVersion.startsWith("kubeflow.org/");
  return { value, problems: [], tfjob, locate };
}

// documentPath drops the "documents[0]" of a ParseJobFile violation: the
// console sends one document. A path of another document is kept whole.
export function documentPath(field: string): string {
  if (field === "documents[0]" || field === "content") return "";
  return field.startsWith("documents[0].") ? field.slice("documents[0].".length) : field;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function camel(s: string): string {
  return s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

export function splitPath(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  const re = /([^.[\]]+)|\[(\d+)\]|\["([^"]*)"\]/g;
  for (const m of path.matchAll(re)) {
    if (m[1] !== undefined) out.push(m[1]);
    else if (m[2] !== undefined) out.push(Number(m[2]));
    else if (m[3] !== undefined) out.push(m[3]);
  }
  if (out[0] === "job") out.shift();
  return out;
}

// locatePath finds the line of the deepest node of path present in the
// document: the key's line for a map entry, the item's for a list entry.
function locatePath(root: Node | null, lc: LineCounter, path: string): number | undefined {
  let node: unknown = root;
  let line: number | undefined = root?.range ? lc.linePos(root.range[0]).line : undefined;
  for (const seg of splitPath(path)) {
    if (isMap(node)) {
      const pair = node.items.find((it) => {
        const k = (it.key as { value?: unknown } | null)?.value;
        return k === seg || (typeof k === "string" && camel(k) === seg);
      });
      if (!pair) break;
      const keyRange = (pair.key as Node | null)?.range;
      if (keyRange) line = lc.linePos(keyRange[0]).line;
      node = pair.value;
    } else if (isSeq(node) && typeof seg === "number") {
      const item = node.items[seg] as Node | undefined;
      if (!item) break;
      if (item.range) line = lc.linePos(item.range[0]).line;
      node = item;
    } else {
      break;
    }
  }
  return line;
}
