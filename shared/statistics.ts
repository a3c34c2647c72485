/**
 * The statistics of eval comparison, in one place: Wilson score intervals, a two-sided test of two
 * proportions (Fisher's exact when an expected cell count is under 5, else Pearson's chi-square),
 * the Mann–Whitney U test, and linear-interpolation quantiles. simple-statistics, jStat and
 * @stdlib/stats have neither Fisher's exact test nor the Mann–Whitney U test, so the formulas live
 * here with unit tests against published values (test/unit/shared/statistics.test.ts). Each function follows R's definition of the same
 * test, so its answers can be checked against `fisher.test`, `wilcox.test`, `prop.test` and `quantile`.
 */

/** The 97.5th percentile of the standard normal distribution: a 95% two-sided interval. */
export const Z_95 = 1.959963984540054;

export interface Interval {
  low: number;
  high: number;
}

/** Wilson score interval (no continuity correction) of `successes` out of `n`; null when n = 0. */
export function wilsonInterval(successes: number, n: number, z = Z_95): Interval | null {
  if (n === 0) return null;
  const p = successes / n;
  const z2 = z * z;
  const denominator = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denominator;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denominator;
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/**
 * erfc(x) by the Chebyshev fit of Numerical Recipes (`erfcc`), fractional error under 1.2e-7
 * everywhere: p-values are reported to four significant digits.
 */
export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const poly =
    -z * z -
    1.26551223 +
    t *
      (1.00002368 +
        t *
          (0.37409196 +
            t *
              (0.09678418 +
                t *
                  (-0.18628806 +
                    t *
                      (0.27886807 +
                        t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  const value = t * Math.exp(poly);
  return x >= 0 ? value : 2 - value;
}

/** P(Z ≤ x) for a standard normal Z. */
export function normalCdf(x: number): number {
  return 0.5 * erfc(-x / Math.SQRT2);
}

/**
 * Fisher's exact test of the 2×2 table [[a, b], [c, d]], two-sided as in R: the sum of the
 * probabilities of every table with the same margins that is no more likely than the one observed.
 */
export function fisherExact(a: number, b: number, c: number, d: number): number {
  const row1 = a + b;
  const col1 = a + c;
  const n = a + b + c + d;
  const lowest = Math.max(0, col1 - (n - row1));
  const highest = Math.min(row1, col1);
  // hypergeometric probabilities by their ratio recursion, relative to the first, then normalised
  const weights: number[] = [1];
  for (let x = lowest; x < highest; x++) {
    const ratio = ((row1 - x) * (col1 - x)) / ((x + 1) * (n - row1 - col1 + x + 1));
    weights.push(weights[weights.length - 1]! * ratio);
  }
  const peak = Math.max(...weights);
  const scaled = weights.map((weight) => weight / peak);
  const total = scaled.reduce((sum, weight) => sum + weight, 0);
  const observed = scaled[a - lowest]!;
  // R's relative tolerance, so tables as likely as the observed one are counted despite rounding
  const bound = observed * (1 + 1e-7);
  const tail = scaled.filter((weight) => weight <= bound).reduce((sum, weight) => sum + weight, 0);
  return Math.min(1, tail / total);
}

/** Pearson's chi-square test of the 2×2 table without continuity correction (R: `correct = FALSE`). */
export function chiSquare2x2(a: number, b: number, c: number, d: number): number {
  const n = a + b + c + d;
  const margins = (a + b) * (c + d) * (a + c) * (b + d);
  if (margins === 0) return 1;
  const statistic = (n * (a * d - b * c) ** 2) / margins;
  return erfc(Math.sqrt(statistic / 2));
}

export interface ProportionTest {
  test: "fisher_exact" | "chi_square";
  p: number;
}

/** Two-sided test that `x1/n1` and `x2/n2` come from one rate; Fisher's exact for small counts. */
export function compareProportions(x1: number, n1: number, x2: number, n2: number): ProportionTest | null {
  if (n1 === 0 || n2 === 0) return null;
  const n = n1 + n2;
  const successes = x1 + x2;
  const expected = [n1, n2].flatMap((size) => [(size * successes) / n, (size * (n - successes)) / n]);
  if (expected.some((cell) => cell < 5))
    return { test: "fisher_exact", p: fisherExact(x1, n1 - x1, x2, n2 - x2) };
  return { test: "chi_square", p: chiSquare2x2(x1, n1 - x1, x2, n2 - x2) };
}

export interface MannWhitney {
  /** U of the first sample: how many (x, y) pairs have x > y, ties counting one half */
  u: number;
  p: number;
  method: "exact" | "normal";
}

/** Mid-ranks (1-based) of `values`, and the sizes of their groups of ties. */
function rank(values: number[]): { ranks: number[]; ties: number[] } {
  const order = values.map((value, index) => ({ value, index })).sort((x, y) => x.value - y.value);
  const ranks = new Array<number>(values.length);
  const ties: number[] = [];
  for (let start = 0; start < order.length; ) {
    let end = start;
    while (end + 1 < order.length && order[end + 1]!.value === order[start]!.value) end++;
    for (let k = start; k <= end; k++) ranks[order[k]!.index] = (start + end) / 2 + 1;
    if (end > start) ties.push(end - start + 1);
    start = end + 1;
  }
  return { ranks, ties };
}

/** P(U ≤ u) for samples of sizes m and n without ties, by the exact recursion on (m, n). */
function exactUCdf(u: number, m: number, n: number): number {
  // row[j][k] = P(U = k) for sizes (i, j); P(i, j, k) = i/(i+j)·P(i−1, j, k−j) + j/(i+j)·P(i, j−1, k)
  let previous: Float64Array[] = Array.from({ length: n + 1 }, () => Float64Array.of(1));
  for (let i = 1; i <= m; i++) {
    const current: Float64Array[] = [Float64Array.of(1)];
    for (let j = 1; j <= n; j++) {
      const cells = new Float64Array(i * j + 1);
      const fewerX = previous[j]!;
      const fewerY = current[j - 1]!;
      for (let k = 0; k <= i * j; k++) {
        const viaX = k - j >= 0 && k - j < fewerX.length ? fewerX[k - j]! : 0;
        const viaY = k < fewerY.length ? fewerY[k]! : 0;
        cells[k] = (i / (i + j)) * viaX + (j / (i + j)) * viaY;
      }
      current.push(cells);
    }
    previous = current;
  }
  const distribution = previous[n]!;
  let sum = 0;
  for (let k = 0; k <= Math.min(Math.floor(u), m * n); k++) sum += distribution[k]!;
  return Math.min(1, sum);
}

/**
 * Two-sided Mann–Whitney U test (Wilcoxon rank-sum) as R's `wilcox.test`: exact when both samples
 * are under 50 and have no ties, else the normal approximation with tie and continuity correction.
 */
export function mannWhitney(xs: number[], ys: number[]): MannWhitney | null {
  const m = xs.length;
  const n = ys.length;
  if (m === 0 || n === 0) return null;
  const { ranks, ties } = rank([...xs, ...ys]);
  const rankSum = ranks.slice(0, m).reduce((sum, r) => sum + r, 0);
  const u = rankSum - (m * (m + 1)) / 2;
  if (m < 50 && n < 50 && ties.length === 0) {
    const oneSided = u > (m * n) / 2 ? 1 - exactUCdf(u - 1, m, n) : exactUCdf(u, m, n);
    return { u, p: Math.min(1, 2 * oneSided), method: "exact" };
  }
  const total = m + n;
  const tieTerm = ties.reduce((sum, t) => sum + t ** 3 - t, 0) / (total * (total - 1));
  const sigma = Math.sqrt(((m * n) / 12) * (total + 1 - tieTerm));
  if (sigma === 0) return { u, p: 1, method: "normal" };
  const centred = u - (m * n) / 2;
  const z = (centred - Math.sign(centred) * 0.5) / sigma;
  return { u, p: Math.min(1, 2 * Math.min(normalCdf(z), 1 - normalCdf(z))), method: "normal" };
}

/** The q-quantile of `values` by linear interpolation between order statistics (R's type 7). */
export function quantile(values: number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((x, y) => x - y);
  const position = (sorted.length - 1) * q;
  const below = Math.floor(position);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below]! + (position - below) * (sorted[above]! - sorted[below]!);
}
