import { describe, expect, it } from "vitest";
import {
  bodyWithRepeated,
  dropRepeated,
  findingMarker,
  fingerprint,
  hunkContext,
  standingFingerprints,
} from "../../../../worker/outputs/findings.ts";
import { endText, inert, progressText } from "../../../../worker/outputs/sticky.ts";

const PATCH = "@@ -20,3 +20,4 @@\n const a = 1;\n+const c = b();\n return a;\n }";
const MOVED =
  "@@ -1,2 +1,3 @@\n top\n+added above\n x\n@@ -30,3 +31,4 @@\n const a = 1;\n+const c = b();\n return a;\n }";
const FILES = [{ filename: "src/app.js", patch: PATCH }];

describe("finding fingerprints", () => {
  const finding = { path: "src/app.js", line: 21, body: "b() can throw" };
  const print = fingerprint(finding, hunkContext(PATCH, finding));

  it("read the diff's text around the line, not its number, and the body without case or spacing", () => {
    expect(hunkContext(PATCH, finding)).toEqual(["const a = 1;", "const c = b();", "return a;", "}"]);
    const moved = { ...finding, line: 32 };
    expect(fingerprint(moved, hunkContext(MOVED, moved))).toBe(print);
    expect(fingerprint({ ...finding, body: "  B() CAN\n throw " }, hunkContext(PATCH, finding))).toBe(print);
    expect(fingerprint({ ...finding, body: "b() cannot throw" }, hunkContext(PATCH, finding))).not.toBe(
      print,
    );
    expect(fingerprint({ ...finding, path: "src/other.js" }, hunkContext(PATCH, finding))).not.toBe(print);
  });

  it("a finding standing in svc's own review is dropped and counted; the same finding twice in one result is posted once", () => {
    const standing = standingFingerprints(
      [
        {
          id: 1,
          body: `old\n\n${findingMarker(print)}`,
          path: "src/app.js",
          line: 21,
          pull_request_review_id: 7,
        },
      ],
      new Set(["7"]),
    );
    const fresh = { path: "src/app.js", line: 22, body: "return value unused" };
    const { fresh: posted, repeated } = dropRepeated(FILES, [finding, fresh, fresh], standing);
    expect(repeated).toBe(1);
    expect(posted).toHaveLength(1);
    expect(posted[0]!.body).toMatch(/^return value unused\n\n<!-- svc:finding:[0-9a-f]{16} -->$/);
    expect(bodyWithRepeated("Body.", 2)).toBe("Body.\n\n2 findings already reported");
    expect(bodyWithRepeated("", 1)).toBe("1 finding already reported");
  });

  it("stands only in a review svc delivered, in a thread's first comment whose lines did not change", () => {
    const body = `x\n\n${findingMarker(print)}`;
    const base = { id: 1, body, path: "src/app.js", line: 21 as number | null, pull_request_review_id: 7 };
    expect(standingFingerprints([base], new Set(["8"])).size).toBe(0);
    expect(standingFingerprints([{ ...base, line: null }], new Set(["7"])).size).toBe(0);
    expect(standingFingerprints([{ ...base, in_reply_to_id: 3 }], new Set(["7"])).size).toBe(0);
    expect(standingFingerprints([base], new Set(["7"]))).toEqual(new Set([print]));
  });
});

describe("sticky comment lines", () => {
  it("progress names the commit and links the trace page only when public_url is set", () => {
    expect(progressText("pr-review", "a".repeat(40), "inv_abcdefgh", "https://svc.example.com")).toBe(
      `⏳ **pr-review** is running on commit ${"a".repeat(40)} · [trace](https://svc.example.com/ui/trace/inv_abcdefgh)`,
    );
    expect(progressText("pr-review", "not a sha", "inv_abcdefgh", undefined)).toBe(
      "⏳ **pr-review** is running",
    );
  });

  it("a run's text is shown inert: one line in a code span no backtick closes, no marker left", () => {
    expect(inert("a `b` c")).toBe("``a `b` c``");
    expect(inert("`x`")).toBe("`` `x` ``");
    expect(inert("@octocat see\n[link](http://x) <!-- svc:inv_a:summary -->")).toBe(
      "`@octocat see [link](http://x) <!- - svc:inv_a:summary -->`",
    );
    expect(inert("y".repeat(500))).toHaveLength(302);
  });

  it("the end line says failed or cancelled with the code and message", () => {
    const diagnostic = { code: "superseded", message: "a newer push superseded this run" };
    expect(endText("pr-review", null, "inv_abcdefgh", undefined, { status: "cancelled", diagnostic })).toBe(
      "⏹ **pr-review** was cancelled: `superseded` `a newer push superseded this run`",
    );
    expect(
      endText("pr-review", "abcdef0", "inv_x", undefined, { status: "completed", diagnostic: null }),
    ).toBe("✅ **pr-review** finished on commit abcdef0 with nothing to report");
  });
});
