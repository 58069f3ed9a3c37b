// Pure geometry of the experiments page's charts (pages/Experiments.tsx):
// a scatter of one parameter against the objective, one dot per trial, and
// a trial's metric curve. Axes map data to pixels linearly, or on a log
// scale for a log-scaled parameter.

export interface Axis {
  min: number;
  max: number;
  log: boolean;
}

// axisOf spans values (padded 5% each side, so no dot sits on the frame);
// a log axis needs positive values, and falls back to linear otherwise.
export function axisOf(values: number[], log = false): Axis {
  const finite = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  const useLog = log && finite.length === values.length && finite.length > 0;
  const t = (v: number) => (useLog ? Math.log10(v) : v);
  let lo = Math.min(...finite.map(t));
  let hi = Math.max(...finite.map(t));
  if (!finite.length) {
    lo = 0;
    hi = 1;
  } else if (lo === hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  const pad = (hi - lo) * 0.05;
  return { min: lo - pad, max: hi + pad, log: useLog };
}

// place maps v on axis a to [0, length]; flip puts the axis's min at
// length (a y axis, whose pixels grow downwards).
export function place(a: Axis, v: number, length: number, flip = false): number {
  const t = a.log ? Math.log10(v) : v;
  const f = (t - a.min) / (a.max - a.min);
  return flip ? length * (1 - f) : length * f;
}

export interface Dot {
  x: number;
  y: number;
  trial: number;
  best: boolean;
}

// scatter places each trial with both a parameter value and an objective.
export function scatter(
  points: { trial: number; param: number; objective: number }[],
  best: number | undefined,
  width: number,
  height: number,
  logX: boolean,
): { dots: Dot[]; x: Axis; y: Axis } {
  const x = axisOf(points.map((p) => p.param), logX);
  const y = axisOf(points.map((p) => p.objective));
  return {
    x,
    y,
    dots: points.map((p) => ({
      x: place(x, p.param, width),
      y: place(y, p.objective, height, true),
      trial: p.trial,
      best: p.trial === best,
    })),
  };
}

// polyline is an SVG points attribute for a curve of (step, value) points.
export function polyline(points: { step: number; value: number }[], width: number, height: number): string {
  const x = axisOf(points.map((p) => p.step));
  const y = axisOf(points.map((p) => p.value));
  return points.map((p) => `${place(x, p.step, width).toFixed(1)},${place(y, p.value, height, true).toFixed(1)}`).join(" ");
}
