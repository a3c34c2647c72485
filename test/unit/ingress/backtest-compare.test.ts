import { describe, expect, it } from "vitest";
import {
  changedLines,
  comparePull,
  findingsOf,
  humanComments,
  totals,
} from "../../../ingress/evals/backtest-compare.ts";

/** A backtest's comparison: findings against human comments and the lines later commits changed. */
describe("backtest comparison", () => {
  it("reads the old lines a later diff touched: removed lines, and the line an insertion follows", () => {
    const changed = changedLines([
      {
        filename: "src/a.js",
        status: "modified",
        patch: "@@ -8,5 +8,6 @@ fn\n a\n b\n-c\n+C\n d\n+e\n f",
      },
      { filename: "src/insert.js", status: "modified", patch: "@@ -5,2 +5,3 @@\n a\n+new\n b" },
      { filename: "src/new.js", status: "added", patch: "@@ -0,0 +1 @@\n+x" },
      { filename: "src/gone.js", status: "removed" },
      { filename: "src/b2.js", previous_filename: "src/b.js", status: "renamed" },
    ]);
    expect([...(changed.get("src/a.js") as Set<number>)].sort((x, y) => x - y)).toEqual([10, 11, 12]);
    // an insertion between old lines 5 and 6 touches both
    expect([...(changed.get("src/insert.js") as Set<number>)].sort((x, y) => x - y)).toEqual([5, 6]);
    expect(changed.has("src/new.js")).toBe(false);
    expect(changed.get("src/gone.js")).toBe("whole");
    expect(changed.get("src/b.js")).toBe("whole");
  });

  it("leaves out svc's own comments: its login, a bot, or a body with its markers", () => {
    const human = humanComments(
      [
        { path: "a.js", line: 4, user: { login: "octo-member", type: "User" } },
        { path: "a.js", line: null, original_line: 9, start_line: null, user: { login: "octo" } },
        { path: "a.js", line: 5, user: { login: "svc-bot", type: "User" } },
        { path: "a.js", line: 6, user: { login: "ci[bot]", type: "Bot" } },
        { path: "a.js", line: 7, user: { login: "me" }, body: "x <!-- svc:finding:0123456789abcdef -->" },
        { path: "a.js", line: null, user: { login: "octo" } },
      ],
      ["svc-bot"],
    );
    expect(human).toEqual([
      { path: "a.js", start: 4, end: 4 },
      { path: "a.js", start: 9, end: 9 },
    ]);
  });

  it("a finding meets a human comment or a later change within three lines of it, on its path", () => {
    const findings = findingsOf({
      held: null,
      result: {
        review: {
          comments: [
            { path: "a.js", line: 10, body: "near both" },
            { path: "a.js", start_line: 20, line: 22, body: "near nothing" },
            { path: "b.js", line: 10, body: "other file" },
          ],
        },
      },
    })!;
    const compared = comparePull(
      findings,
      [{ path: "a.js", start: 13, end: 13 }],
      new Map([["a.js", new Set([7])]]),
    );
    expect(compared).toEqual({
      findings: 3,
      onHumanLines: 1,
      onFixedLines: 1,
      humanComments: 1,
      humanCommentsFound: 1,
      fixedFiles: 1,
    });
    const summed = totals([compared, { ...compared, onHumanLines: 0, humanCommentsFound: 0 }]);
    expect(summed.findings).toBe(6);
    expect(summed.onHumanLines).toMatchObject({ count: 1, n: 6 });
    expect(summed.onHumanLines.interval!.low).toBeGreaterThan(0);
    expect(summed.onHumanLines.interval!.high).toBeLessThan(1);
    expect(summed.humanCommentsFound).toMatchObject({ count: 1, n: 2, rate: 0.5 });
  });

  it("a held run without a result is read from its held outputs", () => {
    const held = JSON.stringify([{ key: "review", comments: [{ path: "a.js", line: 3, body: "x" }] }]);
    expect(findingsOf({ held, result: null })).toEqual([{ path: "a.js", start: 3, end: 3 }]);
    expect(findingsOf(null)).toBeNull();
  });
});
