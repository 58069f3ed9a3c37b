import { useMemo, useState, type ChangeEvent, type FormEvent } from "react";
import { Link, useLocation, useNavigate, useParams } from "react-router";
import { ApiError, paths } from "../api/client";
import type { Job } from "../api/types";
import { documentPath, readJobFile, type Problem } from "../jobfile";
import { useSession } from "../session";
// The form starts with tyctl's documented example: one file shows both.
import example from "../../../cmd/tyctl/examples/mnist.yaml?raw";

interface Warning {
  field: string;
  description: string;
}

// SubmitPage takes a job file (pasted, uploaded, or a job's own for
// "submit again") or a Kubeflow TFJob manifest, and shows every problem
// on the line of the field it is about: YAML syntax errors, found before
// sending, and the server's field violations. The server reads the job
// file (jobs:parse, the lenient rules every client shares); the page then
// creates the job it returns.
export function SubmitPage() {
  const { tenant = "" } = useParams();
  const { api } = useSession();
  const navigate = useNavigate();
  const prefill = (useLocation().state as { yaml?: string } | null)?.yaml;
  const [text, setText] = useState(prefill ?? example);
  const [jobIdInput, setJobId] = useState("");
  const [problems, setProblems] = useState<Problem[]>([]);
  const [shown, setShown] = useState(""); // the text the problems are about
  const [error, setError] = useState<string>();
  const [warnings, setWarnings] = useState<Warning[]>([]);
  const [imported, setImported] = useState<string>();
  const [allowWarnings, setAllowWarnings] = useState(false);
  const [busy, setBusy] = useState(false);
  const parsed = useMemo(() => readJobFile(text), [text]);

  async function upload(e: ChangeEvent<HTMLInputElement>) {
    const f = e.target.files?.[0];
    if (f) setText(await f.text());
  }

  async function submit(e: FormEvent) {
    e.preventDefault();
    setError(undefined);
    setWarnings([]);
    setImported(undefined);
    setShown(text);
    if (parsed.problems.length > 0) {
      setProblems(parsed.problems);
      return;
    }
    setProblems([]);
    const q = new URLSearchParams({ requestId: crypto.randomUUID() });
    if (jobIdInput.trim()) q.set("jobId", jobIdInput.trim());
    setBusy(true);
    try {
      if (parsed.tfjob) {
        if (allowWarnings) q.set("allowWarnings", "true");
        const r = await api.call<{ job?: Job; warnings?: Warning[] }>("POST", `${paths.jobs(tenant)}:importTFJob?${q}`, parsed.value);
        // Imported with warnings: stay, so that they can be read.
        if (r.warnings?.length) {
          setWarnings(r.warnings);
          setImported(r.job?.name?.split("/").pop());
          return;
        }
      } else {
        const read = await api.call<{ jobs?: Job[] }>("POST", `${paths.jobs(tenant)}:parse`, { content: text });
        const jobs = read.jobs ?? [];
        if (jobs.length !== 1) {
          setError(`This file holds ${jobs.length} jobs; the console submits one at a time (tyctl jobs submit -f submits several).`);
          return;
        }
        await api.call<Job>("POST", `${paths.jobs(tenant)}?${q}`, jobs[0]);
      }
      navigate(`/tenants/${tenant}/jobs`);
    } catch (err) {
      if (err instanceof ApiError && err.violations.length > 0) {
        setProblems(err.violations.map((v) => {
          const path = documentPath(v.field);
          return { path, message: v.description, line: parsed.locate(path.replace(/^tfjob\./, "")) };
        }));
        setError(err.message);
      } else if (parsed.tfjob && err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        setError("This server cannot import Kubeflow TFJob manifests.");
      } else {
        setError((err as Error).message);
      }
    } finally {
      setBusy(false);
    }
  }

  const lines = shown.split("\n");
  const byLine = new Map<number, Problem[]>();
  const unplaced: Problem[] = [];
  for (const p of problems) {
    if (p.line) byLine.set(p.line, [...(byLine.get(p.line) ?? []), p]);
    else unplaced.push(p);
  }

  return (
    <>
      <h1>Submit a job to {tenant}</h1>
      <form onSubmit={(e) => void submit(e)} className="submit" aria-describedby="submit-help">
        <p id="submit-help" className="help">
          Paste or upload a Trainyard job file (YAML or JSON, as <code>tyctl jobs submit -f</code> takes it) or a Kubeflow TFJob manifest.
        </p>
        <div className="row">
          <label>
            Job id <span className="sub">(optional)</span>
            <input value={jobIdInput} onChange={(e) => setJobId(e.target.value)} placeholder="generated when empty" pattern="[a-z]([-a-z0-9]*[a-z0-9])?" />
          </label>
          <label>
            Upload a file
            <input type="file" accept=".yaml,.yml,.json,application/yaml,application/json" onChange={(e) => void upload(e)} />
          </label>
          {parsed.tfjob && (
            <label className="check">
              <input type="checkbox" checked={allowWarnings} onChange={(e) => setAllowWarnings(e.target.checked)} />
              Submit even if some TFJob fields cannot be honoured as written
            </label>
          )}
        </div>
        <div className={problems.length ? "editor with-problems" : "editor"}>
          <label htmlFor="jobfile" className="sr-only">Job file</label>
          <textarea
            id="jobfile"
            value={text}
            onChange={(e) => setText(e.target.value)}
            spellCheck={false}
            rows={24}
            aria-invalid={problems.length > 0}
            aria-describedby={problems.length ? "problems" : undefined}
          />
          {problems.length > 0 && (
            <div id="problems" className="annotated" role="region" aria-label="Problems, next to their lines">
              <p role="alert">{problems.length === 1 ? "1 problem" : `${problems.length} problems`}: fix {problems.length === 1 ? "it" : "them"} and submit again.</p>
              <ol className="lines">
                {lines.map((l, i) => (
                  <li key={i} className={byLine.has(i + 1) ? "bad" : ""} value={i + 1}>
                    <code>{l || " "}</code>
                    {(byLine.get(i + 1) ?? []).map((p) => (
                      <div key={p.path + p.message} className="violation" data-field={p.path}>
                        {p.path && <strong>{p.path}</strong>} {p.message}
                      </div>
                    ))}
                  </li>
                ))}
              </ol>
              {unplaced.map((p) => (
                <div key={p.path + p.message} className="violation" data-field={p.path}><strong>{p.path}</strong> {p.message}</div>
              ))}
            </div>
          )}
        </div>
        {error && problems.length === 0 && <p role="alert" className="error">{error}</p>}
        {imported && (
          <p role="status" className="notice">
            Imported as <Link to={`/tenants/${tenant}/jobs/${imported}`}>{imported}</Link>, with these differences from the TFJob:
          </p>
        )}
        {warnings.length > 0 && (
          <ul className="warnings" aria-label="Import warnings">
            {warnings.map((w) => <li key={w.field}><strong>{w.field}</strong> {w.description}</li>)}
          </ul>
        )}
        <button type="submit" className="primary" disabled={busy}>{parsed.tfjob ? "Import TFJob" : "Submit"}</button>
      </form>
    </>
  );
}
