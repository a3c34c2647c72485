import { describe, expect, it } from "vitest";
import {
  chiSquare2x2,
  compareProportions,
  erfc,
  fisherExact,
  mannWhitney,
  normalCdf,
  quantile,
  wilsonInterval,
} from "../../../shared/statistics.ts";

/**
 * Reference values from the literature and from the documented examples of R's own tests, so a
 * wrong formula cannot agree with itself.
 */
describe("Wilson score interval", () => {
  // Newcombe (1998), Statistics in Medicine 17:857-872, Table I, method 3 (score, no correction)
  it.each([
    [81, 263, 0.2553, 0.3662],
    [15, 148, 0.0624, 0.1605],
    [0, 20, 0, 0.1611],
    [1, 29, 0.0061, 0.1718],
  ])("%i/%i is %f to %f", (successes, n, low, high) => {
    const interval = wilsonInterval(successes, n)!;
    expect(interval.low).toBeCloseTo(low, 4);
    expect(interval.high).toBeCloseTo(high, 4);
  });

  it("has no interval for an empty cohort and stays within [0, 1]", () => {
    expect(wilsonInterval(0, 0)).toBeNull();
    expect(wilsonInterval(5, 5)!.high).toBe(1);
  });
});

describe("Fisher's exact test, two-sided", () => {
  it("the lady tasting tea, [[3, 1], [1, 3]], is 0.4857 (Fisher 1935; Agresti 2002, 3.5.2)", () => {
    expect(fisherExact(3, 1, 1, 3)).toBeCloseTo(0.4857, 4);
  });
  it("R's fisher.test example of convicted like-sex twins, [[2, 10], [15, 3]] by column, is 0.0005367", () => {
    expect(fisherExact(2, 15, 10, 3)).toBeCloseTo(0.0005367, 7);
  });
  it("is 1 for a table with nothing to tell", () => {
    expect(fisherExact(4, 1, 3, 2)).toBe(1);
    expect(fisherExact(0, 0, 0, 0)).toBe(1);
  });
});

describe("normal distribution and chi-square", () => {
  it("erfc and the normal CDF agree with tabulated values", () => {
    expect(erfc(0)).toBeCloseTo(1, 7);
    expect(erfc(1)).toBeCloseTo(0.157299207, 7);
    expect(normalCdf(1.959963984540054)).toBeCloseTo(0.975, 7);
    expect(normalCdf(-1.6448536)).toBeCloseTo(0.05, 7);
  });
  it("Pearson's chi-square without correction of [[36, 4], [20, 20]] is 9.477e-5 (R prop.test, correct = FALSE)", () => {
    expect(chiSquare2x2(36, 4, 20, 20)).toBeCloseTo(9.477225e-5, 8);
  });
  it("uses Fisher's exact test when an expected count is under 5, else chi-square", () => {
    expect(compareProportions(5, 5, 2, 5)).toEqual({ test: "fisher_exact", p: expect.closeTo(0.1667, 4) });
    expect(compareProportions(36, 40, 20, 40)).toEqual({
      test: "chi_square",
      p: expect.closeTo(9.477e-5, 7),
    });
    expect(compareProportions(1, 0, 1, 1)).toBeNull();
  });
});

describe("Mann–Whitney U", () => {
  // R's wilcox.test documentation example (Hollander & Wolfe 1973, p. 69): W = 35, one-sided p = 0.1272
  const x = [0.8, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46];
  const y = [1.15, 0.88, 0.9, 0.74, 1.21];

  it("is exact without ties for small samples: U = 35, two-sided p = 2 × 0.1272", () => {
    const answer = mannWhitney(x, y)!;
    expect(answer).toMatchObject({ u: 35, method: "exact" });
    expect(answer.p).toBeCloseTo(0.2544123, 6);
    // the same test seen from the other sample
    expect(mannWhitney(y, x)!.p).toBeCloseTo(0.2544123, 6);
  });

  it("uses the normal approximation with tie and continuity correction when values tie (R: 0.2544016)", () => {
    const answer = mannWhitney(x, [...y, 1.15])!;
    expect(answer).toMatchObject({ u: 41, method: "normal" });
    expect(answer.p).toBeCloseTo(0.2544016, 6);
  });

  it("uses the normal approximation for 50 or more values per sample (R: 0.002567)", () => {
    const a = Array.from({ length: 60 }, (_, i) => i + 1);
    const b = a.map((value) => value + 10.5);
    const answer = mannWhitney(a, b)!;
    expect(answer).toMatchObject({ u: 1225, method: "normal" });
    expect(answer.p).toBeCloseTo(0.002566888, 7);
  });

  it("has no answer for an empty sample", () => {
    expect(mannWhitney([], [1])).toBeNull();
  });
});

describe("quantile (R type 7)", () => {
  it("interpolates between order statistics", () => {
    expect(quantile([10, 1, 4, 3, 2], 0.5)).toBe(3);
    expect(quantile([10, 1, 4, 3, 2], 0.9)).toBeCloseTo(7.6, 10);
    expect(quantile([7], 0.9)).toBe(7);
    expect(quantile([], 0.5)).toBeNull();
  });
});
