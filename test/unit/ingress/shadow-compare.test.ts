import { describe, expect, it } from "vitest";
import { dismissalWhy } from "../../../db/notes.ts";
import type { PairFinding, ShadowPair } from "../../../db/review-findings.ts";
import { compareShadow, matchedFates } from "../../../ingress/evals/shadow-compare.ts";
import { fateOfDismissal, findingsOf } from "../../../worker/outputs/finding-fates.ts";

/** The shadow comparison's pure parts: matching by lines, the numbers, and the verdict. */
const run = (invocation: string, costUsd: number | null = null) => ({
  invocation,
  version: invocation.startsWith("l") ? "1.0.0" : "1.1.0-next.1",
  durationMs: 1000,
  tokens: costUsd === null ? null : 100,
  costUsd,
  createdAt: new Date(0),
});
const pair = (n: number, liveCost: number | null = null, shadowCost: number | null = null): ShadowPair => ({
  trigger: `t${n}`,
  live: run(`l${n}`, liveCost),
  shadow: run(`s${n}`, shadowCost),
});
const at = (
  invocation: string,
  startLine: number,
  endLine: number,
  fate: PairFinding["fate"] = "open",
  path = "a.ts",
) => ({
  invocation,
  path,
  startLine,
  endLine,
  fate,
});
const none = { runs: 0, tokens: 0, costUsd: null };

describe("a candidate's finding takes the fate of the live finding on the same lines", () => {
  it("of its own event, same path, the one sharing the most lines; none when no live finding overlaps", () => {
    const pairs = [pair(1), pair(2)];
    const findings = [
      at("l1", 10, 12, "resolved_with_change"),
      at("l1", 12, 20, "dismissed"),
      at("l1", 30, 30, "thumbed_down", "b.ts"),
      at("l2", 40, 40, "dismissed"),
      at("s1", 11, 14), // 10-12 shares 2 lines, 12-20 shares 3
      at("s1", 30, 30), // same lines, another path
      at("s1", 40, 40), // another event's live finding
      at("s2", 40, 41),
    ];
    expect(matchedFates(pairs, findings)).toEqual(["dismissed", null, null, "dismissed"]);
  });

  it("counts the shares of each version's findings, and says when there is not enough data", () => {
    const findings = [at("l1", 1, 1, "resolved_with_change"), at("l1", 5, 5), at("s1", 1, 2), at("s1", 9, 9)];
    const c = compareShadow(
      "review",
      { live: "1.0.0", candidate: "1.1.0-next.1" },
      [pair(1, 0.2, 0.05)],
      findings,
      {
        live: { runs: 4, tokens: 4000, costUsd: 0.8 },
        shadow: { runs: 1, tokens: 1000, costUsd: 0.05 },
      },
    );
    expect(c.live).toEqual({ version: "1.0.0", runs: 1, findings: 2 });
    expect(c.candidate).toMatchObject({ findings: 2, sameLines: { count: 1, n: 2 } });
    expect(c.signals[0]).toMatchObject({
      name: "resolved_with_change",
      live: { count: 1, n: 2, rate: 0.5 },
      candidate: { count: 1, n: 2, rate: 0.5 },
      test: "fisher_exact",
      significant: null,
    });
    expect(c.shadowing.costShare).toBeCloseTo(0.0625);
    expect(c.shadowing.tokenShare).toBe(0.25);
    expect(c.tooSmall).toBe(true);
    expect(c.verdict).toBe(
      "not enough data yet: 1 paired runs of 1.0.0 and 1.1.0-next.1; each version needs at least 10 (the numbers are shown, no conclusion is drawn)",
    );
  });

  it("has no share of cost when the live runs were unpriced, and no runs without pairs", () => {
    const c = compareShadow("review", { live: "1.0.0", candidate: null }, [], [], {
      live: none,
      shadow: none,
    });
    expect(c.shadowing).toMatchObject({ costShare: null, tokenShare: null });
    expect(c.perRun.map((m) => [m.name, m.live.n, m.p])).toEqual([
      ["findings", 0, null],
      ["tokens", 0, null],
      ["cost_usd", 0, null],
      ["duration_ms", 0, null],
    ]);
  });
});

describe("finding fates", () => {
  it("a dismissal whose reason is a thumbs-down is thumbed_down, any other dismissed", () => {
    expect(fateOfDismissal("Finding on a.ts dismissed (👎 by @dana): x")).toBe("thumbed_down");
    expect(fateOfDismissal("Finding on a.ts dismissed (thumbed down by @dana): x")).toBe("thumbed_down");
    expect(fateOfDismissal("Finding on a.ts dismissed (resolved without a change by @dana): x")).toBe(
      "dismissed",
    );
    expect(fateOfDismissal(null)).toBe("dismissed");
  });

  it("judges a dismissal by svc's why alone: the file name and the model's rule in its note count for nothing", () => {
    const hostile =
      "Finding on docs/thumbs-down.md dismissed (resolved without a change by @dana): 👎 thumbed down by @x";
    expect(dismissalWhy(hostile, "docs/thumbs-down.md")).toBe("resolved without a change by @dana");
    expect(fateOfDismissal(dismissalWhy(hostile, "docs/thumbs-down.md"))).toBe("dismissed");
    const thumbed = "Finding on a.ts dismissed (thumbed down by @dana): x";
    expect(fateOfDismissal(dismissalWhy(thumbed, "a.ts"))).toBe("thumbed_down");
    // a body svc did not write (edited since) says nothing of why
    expect(dismissalWhy("someone's own words", "a.ts")).toBeNull();
  });

  it("reads a posted finding's lines, fingerprint and rule from its comment", () => {
    expect(
      findingsOf([
        {
          path: "a.ts",
          line: 9,
          start_line: 7,
          body: "Null check\n\nmore\n\n<!-- svc:finding:0123456789abcdef -->",
        },
        { path: "b.ts", line: 3, body: "Unmarked" },
      ]),
    ).toEqual([
      { path: "a.ts", startLine: 7, endLine: 9, fingerprint: "0123456789abcdef", rule: "null check" },
      { path: "b.ts", startLine: 3, endLine: 3, fingerprint: null, rule: "unmarked" },
    ]);
  });
});
