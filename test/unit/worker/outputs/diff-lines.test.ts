import { describe, expect, it } from "vitest";
import {
  bodyWithMoved,
  diffMap,
  inDiff,
  patchLines,
  placeComments,
} from "../../../../worker/outputs/diff-lines.ts";

const PATCH = [
  "@@ -8,4 +8,5 @@ export function main() {",
  " const a = 1;", // old 8, new 8
  "-const b = 2;", // old 9
  "+const b = 3;", // new 9
  "+const c = b();", // new 10
  " return a;", // old 10, new 11
  "@@ -40,2 +41,3 @@",
  " tail();", // old 40, new 41
  "+more();", // new 42
  " end();", // old 41, new 43
  "\\ No newline at end of file",
].join("\n");

describe("patchLines", () => {
  it("puts added and context lines on the RIGHT, deleted and context lines on the LEFT, per hunk", () => {
    const lines = patchLines(PATCH);
    expect([...lines.right].sort((a, b) => a - b)).toEqual([8, 9, 10, 11, 41, 42, 43]);
    expect([...lines.left].sort((a, b) => a - b)).toEqual([8, 9, 10, 40, 41]);
  });

  it("a file without a patch (binary, too large) has no commentable line", () => {
    expect(patchLines(undefined)).toEqual({ left: new Set(), right: new Set() });
  });
});

describe("placing inline comments", () => {
  const diff = diffMap([{ filename: "src/app.js", patch: PATCH }, { filename: "logo.png" }]);

  it("keeps comments on diff lines inline, on their side, and moves the others", () => {
    expect(inDiff(diff, { path: "src/app.js", line: 10, body: "x" })).toBe(true);
    expect(inDiff(diff, { path: "src/app.js", line: 12, body: "between hunks" })).toBe(false);
    expect(inDiff(diff, { path: "src/app.js", line: 9, side: "LEFT", body: "deleted line" })).toBe(true);
    expect(inDiff(diff, { path: "src/app.js", line: 42, side: "LEFT", body: "only new" })).toBe(false);
    expect(inDiff(diff, { path: "logo.png", line: 1, body: "binary" })).toBe(false);
    expect(inDiff(diff, { path: "missing.js", line: 1, body: "not in the pull request" })).toBe(false);
  });

  it("a multi-line comment needs every line of its range in the diff", () => {
    expect(inDiff(diff, { path: "src/app.js", start_line: 8, line: 11, body: "x" })).toBe(true);
    expect(inDiff(diff, { path: "src/app.js", start_line: 11, line: 41, body: "spans two hunks" })).toBe(
      false,
    );
    expect(inDiff(diff, { path: "src/app.js", start_line: 11, line: 9, body: "backwards" })).toBe(false);
  });

  it("moved comments land in the body as path:line — text", () => {
    const { inline, moved } = placeComments(diff, [
      { path: "src/app.js", line: 9, body: "inline" },
      { path: "README.md", line: 40, body: "stray" },
      { path: "src/app.js", start_line: 2, line: 3, body: "old code" },
    ]);
    expect(inline.map((c) => c.body)).toEqual(["inline"]);
    expect(bodyWithMoved("Summary.", moved)).toBe(
      "Summary.\n\nComments on lines outside the diff:\n- README.md:40 — stray\n- src/app.js:2-3 — old code",
    );
    expect(bodyWithMoved("Summary.", [])).toBe("Summary.");
  });
});
