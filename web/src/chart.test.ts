import { describe, expect, it } from "vitest";
import { axisOf, place, polyline, scatter } from "./chart";

describe("chart", () => {
  it("pads a linear axis and maps its ends inside the frame", () => {
    const a = axisOf([0, 10]);
    expect(a.log).toBe(false);
    expect(place(a, 0, 100)).toBeCloseTo(100 / 22, 5);
    expect(place(a, 10, 100)).toBeCloseTo(100 - 100 / 22, 5);
    expect(place(a, 0, 100, true)).toBeCloseTo(100 - 100 / 22, 5);
  });

  it("spreads a log axis by decade, and falls back to linear without positive values", () => {
    const a = axisOf([1e-4, 1e-2, 1], true);
    expect(a.log).toBe(true);
    expect(place(a, 1e-2, 100)).toBeCloseTo(50, 5);
    expect(axisOf([0, 1], true).log).toBe(false);
  });

  it("places the best trial's dot lowest-left for the smallest loss", () => {
    const { dots } = scatter([
      { trial: 0, param: 0.1, objective: 0.5 },
      { trial: 1, param: 0.001, objective: 0.1 },
    ], 1, 200, 100, true);
    const [worse, best] = dots;
    expect(best?.best).toBe(true);
    expect(best!.x).toBeLessThan(worse!.x);
    expect(best!.y).toBeGreaterThan(worse!.y);
  });

  it("draws a curve left to right", () => {
    const pts = polyline([{ step: 1, value: 1 }, { step: 2, value: 0.5 }], 100, 50).split(" ").map((p) => p.split(",").map(Number));
    expect(pts).toHaveLength(2);
    const [[x0, y0], [x1, y1]] = pts as [[number, number], [number, number]];
    expect(x0).toBeLessThan(x1);
    expect(y0).toBeLessThan(y1);
  });
});
