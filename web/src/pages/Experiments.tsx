import { useCallback, useEffect, useState } from "react";
import { Link, useParams } from "react-router";
import { paths } from "../api/client";
import type { Experiment, MetricSeries, Trial } from "../api/types";
import { polyline, scatter } from "../chart";
import { localTime, shortEnum } from "../format";
import { useSession } from "../session";

const expId = (e: Experiment) => e.name.split("/").pop() ?? e.name;
const fmt = (v: number | undefined) => (v === undefined ? "–" : Number(v.toPrecision(6)).toString());

// ExperimentsPage lists the tenant's hyperparameter experiments; one, when
// chosen, shows its trials best first, a scatter of a parameter against
// the objective, and a trial's metric curve.
export function ExperimentsPage() {
  const { tenant = "", experiment } = useParams();
  const { api } = useSession();
  const [list, setList] = useState<Experiment[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    const ctl = new AbortController();
    api.get<{ experiments?: Experiment[] }>(`${paths.tenant(tenant)}/experiments?pageSize=1000`, ctl.signal).then(
      (r) => setList(r.experiments ?? []),
      (e: Error) => !ctl.signal.aborted && setError(e.message),
    );
    return () => ctl.abort();
  }, [api, tenant]);
  if (error) return <p role="alert" className="error">{error}</p>;
  if (!list) return <p aria-live="polite">Loading…</p>;
  return (
    <>
      <h1>Experiments</h1>
      <p className="sub">Hyperparameter sweeps: each trial is a job of the tenant; the early stopping rule stops the ones that lag. Create one with <code>tyctl experiments create -f</code>.</p>
      <table className="experiments">
        <thead>
          <tr><th scope="col">Experiment</th><th scope="col">State</th><th scope="col">Objective</th><th scope="col">Algorithm</th><th scope="col">Max trials</th><th scope="col">Created</th></tr>
        </thead>
        <tbody>
          {list.length === 0 && <tr><td colSpan={6} className="empty">No experiments.</td></tr>}
          {list.map((e) => (
            <tr key={e.name}>
              <th scope="row"><Link to={`/tenants/${tenant}/experiments/${expId(e)}`}>{expId(e)}</Link></th>
              <td>{shortEnum(e.state, "EXPERIMENT_STATE_")}</td>
              <td>{e.spec?.objective?.direction} {e.spec?.objective?.metric}</td>
              <td>{e.spec?.algorithm?.name || "random"}</td>
              <td>{e.spec?.maxTrials}</td>
              <td><time dateTime={e.createTime}>{localTime(e.createTime)}</time></td>
            </tr>
          ))}
        </tbody>
      </table>
      {experiment && <ExperimentDetail key={experiment} name={`tenants/${tenant}/experiments/${experiment}`} />}
    </>
  );
}

function ExperimentDetail({ name }: { name: string }) {
  const { api } = useSession();
  const [exp, setExp] = useState<Experiment>();
  const [trials, setTrials] = useState<Trial[]>();
  const [error, setError] = useState<string>();
  const [param, setParam] = useState<string>();
  const [curve, setCurve] = useState<number>();
  const path = paths.job(name);
  const load = useCallback(() => {
    Promise.all([api.get<Experiment>(path), api.get<{ trials?: Trial[] }>(`${path}/trials`)]).then(
      ([e, t]) => { setExp(e); setTrials(t.trials ?? []); },
      (e: Error) => setError(e.message),
    );
  }, [api, path]);
  useEffect(() => {
    load();
    const timer = setInterval(load, 3000);
    return () => clearInterval(timer);
  }, [load]);
  if (error) return <p role="alert" className="error">{error}</p>;
  if (!exp || !trials) return <p aria-live="polite">Loading…</p>;
  const spec = exp.spec ?? {};
  const metric = spec.objective?.metric ?? "objective";
  const sign = spec.objective?.direction === "maximize" ? -1 : 1;
  const params = spec.parameters ?? [];
  const numeric = params.filter((p) => p.kind === "double" || p.kind === "int" || p.kind === "discrete");
  const shown = numeric.find((p) => p.name === param) ?? numeric[0];
  const sorted = [...trials].sort((a, b) => {
    const ok = (t: Trial) => t.state === "TRIAL_STATE_SUCCEEDED" && t.objective !== undefined;
    if (ok(a) !== ok(b)) return ok(a) ? -1 : 1;
    if (ok(a)) return sign * ((a.objective ?? 0) - (b.objective ?? 0));
    return (a.index ?? 0) - (b.index ?? 0);
  });
  return (
    <section aria-label={`Experiment ${exp.name}`}>
      <h2>{exp.name.split("/").pop()}: {shortEnum(exp.state, "EXPERIMENT_STATE_")}</h2>
      {exp.stateReason && <p className="sub">{exp.stateReason}</p>}
      {exp.bestTrial && (
        <p>Best: trial {exp.bestTrial.index ?? 0}, {metric} {fmt(exp.bestTrial.objective)} with{" "}
          {params.map((p) => `${p.name}=${exp.bestTrial?.parameters?.[p.name ?? ""] ?? ""}`).join(", ")}</p>
      )}
      {shown && (
        <figure>
          <label>Parameter{" "}
            <select value={shown.name} onChange={(e) => setParam(e.target.value)}>
              {numeric.map((p) => <option key={p.name} value={p.name}>{p.name}</option>)}
            </select>
          </label>
          <Scatter trials={trials} param={shown.name ?? ""} log={shown.scale === "log"} best={exp.bestTrial?.index} metric={metric} onPick={setCurve} />
          <figcaption>{shown.name} against each finished trial's {metric}; the best is filled. Pick a dot for its curve.</figcaption>
        </figure>
      )}
      {curve !== undefined && <Curve key={curve} name={`${name}/trials/${curve}`} metric={metric} />}
      <table className="trials">
        <thead>
          <tr><th scope="col">Trial</th><th scope="col">State</th><th scope="col">{metric}</th><th scope="col">Best (step)</th>
            {params.map((p) => <th scope="col" key={p.name}>{p.name}</th>)}<th scope="col"></th></tr>
        </thead>
        <tbody>
          {sorted.map((t) => (
            <tr key={t.name}>
              <th scope="row">{t.index ?? 0}</th>
              <td>{shortEnum(t.state, "TRIAL_STATE_")}{t.stateReason && <div className="sub">{t.stateReason}</div>}</td>
              <td>{fmt(t.objective)}</td>
              <td>{t.bestValue === undefined ? "–" : `${fmt(t.bestValue)} (${t.bestStep ?? 0})`}</td>
              {params.map((p) => <td key={p.name}>{t.parameters?.[p.name ?? ""]}</td>)}
              <td><button type="button" onClick={() => setCurve(t.index ?? 0)}>Curve</button></td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

const W = 480;
const H = 240;

function Scatter({ trials, param, log, best, metric, onPick }: {
  trials: Trial[]; param: string; log: boolean; best?: number; metric: string; onPick: (i: number) => void;
}) {
  const points = trials.flatMap((t) => {
    const v = Number(t.parameters?.[param]);
    const o = t.objective ?? t.bestValue;
    return Number.isFinite(v) && o !== undefined ? [{ trial: t.index ?? 0, param: v, objective: o }] : [];
  });
  const { dots } = scatter(points, best, W, H, log);
  return (
    <svg className="scatter" width={W + 2} height={H + 2} role="img" aria-label={`${param} against ${metric}`}>
      <rect x={1} y={1} width={W} height={H} fill="none" stroke="currentColor" strokeOpacity={0.3} />
      {dots.map((d) => (
        <circle key={d.trial} cx={d.x + 1} cy={d.y + 1} r={d.best ? 6 : 4} fill={d.best ? "currentColor" : "none"} stroke="currentColor"
          onClick={() => onPick(d.trial)}>
          <title>trial {d.trial}</title>
        </circle>
      ))}
    </svg>
  );
}

function Curve({ name, metric }: { name: string; metric: string }) {
  const { api } = useSession();
  const [series, setSeries] = useState<MetricSeries[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    const ctl = new AbortController();
    api.get<{ series?: MetricSeries[] }>(`${paths.job(name)}/metrics`, ctl.signal).then(
      (r) => setSeries(r.series ?? []),
      (e: Error) => !ctl.signal.aborted && setError(e.message),
    );
    return () => ctl.abort();
  }, [api, name]);
  if (error) return <p role="alert" className="error">{error}</p>;
  const s = series?.find((x) => x.metric === metric);
  if (!s) return <p className="sub">{series ? `Trial ${name.split("/").pop()} reported no ${metric}.` : "Loading…"}</p>;
  const pts = (s.points ?? []).map((p) => ({ step: Number(p.step ?? 0), value: p.value ?? 0 }));
  return (
    <figure>
      <svg className="curve" width={W + 2} height={H / 2 + 2} role="img" aria-label={`${metric} of trial ${name.split("/").pop()} by step`}>
        <rect x={1} y={1} width={W} height={H / 2} fill="none" stroke="currentColor" strokeOpacity={0.3} />
        <polyline points={polyline(pts, W, H / 2)} fill="none" stroke="currentColor" transform="translate(1 1)" />
      </svg>
      <figcaption>{metric} of trial {name.split("/").pop()} by step ({pts.length} points)</figcaption>
    </figure>
  );
}
