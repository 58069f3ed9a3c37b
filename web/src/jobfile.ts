// Job files: the Job resource as the REST API takes it in a create's body,
// in YAML or JSON — the format tyctl reads (cmd/tyctl/jobfile.go), with the
// same forgiveness: enum values short and in any case (WORKER,
// on_failure), numbers and booleans where a string is due (cpu: 2), field
// names in lowerCamelCase or snake_case; and the same strictness: an
// unknown field is a problem, with a suggestion, since a typo silently
// dropped (gpus: 4) is a job without GPUs. The shape comes from the API's
// own OpenAPI document, so the two cannot drift apart.
//
// Every problem, and every field violation the server answers with, is
// placed on the line of the YAML that holds the field.
import { isMap, isSeq, LineCounter, parseDocument, type Node } from "yaml";
import { definitions } from "../../web-openapi/trainyard.swagger.json";

interface Schema {
  type?: string;
  format?: string;
  enum?: string[];
  $ref?: string;
  items?: Schema;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema;
}

const defs = definitions as unknown as Record<string, Schema>;

function resolve(s: Schema): Schema {
  let cur = s;
  while (cur.$ref) {
    const next = defs[cur.$ref.replace("#/definitions/", "")];
    if (!next) break;
    cur = { ...next, ...cur, $ref: undefined };
  }
  return cur;
}

export interface Problem {
  path: string;
  message: string;
  line?: number; // 1-based
}

export interface Parsed {
  job?: Record<string, unknown>;
  problems: Problem[];
  // A Kubeflow TFJob manifest rather than a Trainyard job.
  tfjob?: boolean;
  locate: (path: string) => number | undefined;
}

export function parseJobFile(text: string): Parsed {
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
  if (value === null || value === undefined) {
    return { problems: [{ path: "", message: "the file is empty" }], locate };
  }
  if (typeof value !== "object" || Array.isArray(value)) {
    return { problems: [{ path: "", message: "want a job object (spec: {replicas: [...]})", line: 1 }], locate };
  }
  const obj = value as Record<string, unknown>;
  if (obj.kind === "TFJob" && typeof obj.apiVersion === "string" && obj.apiVersion.startsWith("kubeflow.org/")) {
    return { job: obj, problems: [], tfjob: true, locate };
  }
  const n = new Normalizer();
  n.message(obj, resolve({ $ref: "#/definitions/v1Job" }), "");
  return { job: obj, problems: n.problems.map((p) => ({ ...p, line: locate(p.path) })), locate };
}

class Normalizer {
  problems: Problem[] = [];

  fail(path: string, message: string) {
    this.problems.push({ path, message });
  }

  message(obj: Record<string, unknown>, schema: Schema, path: string) {
    const props = schema.properties ?? {};
    for (const key of Object.keys(obj).sort()) {
      const p = path ? `${path}.${key}` : key;
      const name = key in props ? key : camel(key);
      const field = props[name];
      if (!field) {
        this.fail(p, `unknown field${suggest(Object.keys(props), key)}`);
        continue;
      }
      if (name !== key) {
        obj[name] = obj[key];
        delete obj[key];
      }
      if (obj[name] !== null && obj[name] !== undefined) obj[name] = this.value(resolve(field), obj[name], p);
    }
  }

  value(s: Schema, v: unknown, p: string): unknown {
    if (s.type === "array") {
      if (!Array.isArray(v)) return this.fail(p, `want a list, got ${describe(v)}`), v;
      return v.map((x, i) => this.value(resolve(s.items ?? {}), x, `${p}[${i}]`));
    }
    if (s.type === "object" && s.additionalProperties) {
      if (!isObject(v)) return this.fail(p, `want a map of key: value, got ${describe(v)}`), v;
      const item = resolve(s.additionalProperties);
      for (const k of Object.keys(v)) v[k] = this.value(item, v[k], `${p}["${k}"]`);
      return v;
    }
    if (s.properties || s.type === "object") {
      if (!isObject(v)) return this.fail(p, `want an object, got ${describe(v)}`), v;
      this.message(v, s, p);
      return v;
    }
    if (s.enum) return this.enumValue(s.enum, v, p);
    switch (s.type) {
      case "string":
        if (s.format === "int64" || s.format === "uint64") return this.number(v, p);
        if (s.format === "date-time") return v;
        if (typeof v === "number" || typeof v === "boolean") return String(v);
        if (typeof v !== "string") this.fail(p, `want a string, got ${describe(v)}`);
        return v;
      case "boolean":
        if (typeof v !== "boolean") this.fail(p, `want true or false, got ${describe(v)}`);
        return v;
      case "integer":
      case "number":
        return this.number(v, p);
    }
    return v;
  }

  number(v: unknown, p: string): unknown {
    if (typeof v === "number") return v;
    if (typeof v === "string" && v.trim() !== "" && !Number.isNaN(Number(v))) return v;
    this.fail(p, `want a number, got ${describe(v)}`);
    return v;
  }

  enumValue(values: string[], v: unknown, p: string): unknown {
    const choices = shortNames(values);
    if (typeof v !== "string") {
      this.fail(p, `want one of ${choices.join(", ")}, got ${describe(v)}`);
      return v;
    }
    if (values.includes(v)) return v;
    const prefix = enumPrefix(values);
    const want = squash(v);
    const found = values.filter((e) => squash(e) === want || squash(e.slice(prefix.length)) === want);
    if (found.length !== 1) {
      this.fail(p, `"${v}" is not one of ${choices.join(", ")}`);
      return v;
    }
    return found[0];
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null || v === undefined) return "nothing";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return JSON.stringify(v);
  return String(v);
}

function camel(s: string): string {
  return s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function squash(s: string): string {
  return s.replace(/[^A-Za-z0-9]/g, "").toUpperCase();
}

// enumPrefix is the common prefix of an enum's values (REPLICA_TYPE_).
function enumPrefix(values: string[]): string {
  const unspecified = values.find((v) => v.endsWith("_UNSPECIFIED"));
  return unspecified ? unspecified.slice(0, -"UNSPECIFIED".length) : "";
}

export function shortNames(values: string[]): string[] {
  const prefix = enumPrefix(values);
  return values.filter((v) => !v.endsWith("_UNSPECIFIED")).map((v) => v.slice(prefix.length));
}

function suggest(names: string[], key: string): string {
  let best = "";
  let bestDist = 3;
  for (const name of names) {
    let d = editDistance(key.toLowerCase(), name.toLowerCase());
    if (squash(key) === squash(name)) d = 0;
    if (d < bestDist && d < Math.floor(name.length / 2) + 1) {
      best = name;
      bestDist = d;
    }
  }
  return best ? ` (did you mean ${best}?)` : "";
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur[j] = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
    }
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

// splitPath turns spec.replicas[1].resources.gpu or labels["a.b"] into
// segments; a leading "job." (the request field) is dropped.
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
