import { describe, expect, it } from "vitest";
import type { Pipeline } from "../../../shared/config/types.ts";
import { isIgnored, matchesPath, rulesFor } from "../../../shared/review/path-rules.ts";
import { reviewFileRules, reviewGuidelines } from "../../../worker/checkout/review-rules.ts";
import type { ResolvedEvent } from "../../../worker/event/resolve.ts";
import { markedIncomplete, withoutIgnored } from "../../../worker/outputs/review.ts";
import { reviewPrompt, runReview, tooLarge } from "../../../worker/run/review-rules.ts";

const PIPELINE = {
  file: "pipelines/review.yaml",
  outputs: { review: { handler: "codehost.review" } },
  review: {
    maxChangedLines: 1000,
    paths: [
      { path: "db/**", instructions: "Migrations must be reversible." },
      { path: "docs/**", instructions: "Check the links." },
      { path: "**/*.snap", ignore: true },
    ],
  },
} as Pick<Pipeline, "file" | "outputs" | "review">;

const event = (payload: unknown, args?: string) =>
  ({ payload, ...(args !== undefined ? { command: { word: "review", args } } : {}) }) as ResolvedEvent;

describe("path rules", () => {
  it("match with node's globs: ** crosses folders, a dot-name needs its own glob", () => {
    expect(matchesPath("db/migrations/1.sql", "db/**")).toBe(true);
    expect(matchesPath("src/db/x.ts", "db/**")).toBe(false);
    expect(matchesPath("a/b/c.snap", "**/*.snap")).toBe(true);
    expect(matchesPath("c.snap", "**/*.snap")).toBe(true);
    expect(isIgnored(PIPELINE.review!.paths, "ui/__snapshots__/x.snap")).toBe(true);
    expect(isIgnored(PIPELINE.review!.paths, "db/x.sql")).toBe(false);
    expect(rulesFor(PIPELINE.review!.paths, ["db/a.sql", "src/x.ts"])).toEqual([
      { rule: PIPELINE.review!.paths[0], matched: ["db/a.sql"] },
    ]);
  });

  it("the prompt carries the rules of the changed paths only", () => {
    const review = runReview(PIPELINE, {
      changed: { paths: ["db/1.sql", "ui/a.snap", "src/x.ts"], lines: 3 },
      repo: {
        base: { sha: "b".repeat(40), ref: "main" },
        guidelines: "Be kind.",
        paths: [
          { path: "src/**", instructions: "No console.log." },
          { path: "lib/**", instructions: "Never seen." },
        ],
        problems: [],
      },
    })!;
    const prompt = reviewPrompt(review)!;
    expect(prompt.rules.map((rule) => [rule.path, rule.matched])).toEqual([
      ["db/**", ["db/1.sql"]],
      ["src/**", ["src/x.ts"]],
    ]);
    expect(prompt.rules[1]!.from).toBe(".svc/review.yaml of the base branch");
    expect(prompt.ignored).toEqual([{ path: "**/*.snap", matched: ["ui/a.snap"] }]);
    expect(prompt.guidelines?.text).toBe("Be kind.");
  });
});

describe("large pull requests", () => {
  it("counts GitHub's additions + deletions, else the mirror's diff; --force skips the limit", () => {
    const pull = { pull_request: { additions: 900, deletions: 200 } };
    expect(tooLarge(PIPELINE, event(pull), undefined)).toEqual({ lines: 1100, max: 1000 });
    expect(tooLarge(PIPELINE, event({}), { changed: { paths: [], lines: 1001 } })).toEqual({
      lines: 1001,
      max: 1000,
    });
    expect(tooLarge(PIPELINE, event({}), { changed: { paths: [], lines: 1000 } })).toBeUndefined();
    expect(tooLarge(PIPELINE, event(pull, "--force"), undefined)).toBeUndefined();
    expect(tooLarge(PIPELINE, event(pull, "please --forced"), undefined)).toEqual({ lines: 1100, max: 1000 });
  });
});

describe("findings on ignored paths, incomplete results", () => {
  it("drops and counts the findings on ignored paths", () => {
    const result = {
      review: {
        event: "COMMENT",
        body: "Two things.",
        comments: [
          { path: "ui/a.snap", line: 1, body: "snapshot" },
          { path: "./ui/b.snap", line: 2, body: "snapshot" },
          { path: "db/1.sql", line: 3, body: "irreversible" },
        ],
      },
    };
    const out = withoutIgnored(PIPELINE, result, PIPELINE.review!.paths) as typeof result;
    expect(out.review.comments.map((comment) => comment.path)).toEqual(["db/1.sql"]);
    expect(out.review.body).toBe("Two things.\n\n2 findings on ignored paths dropped");
    expect(withoutIgnored(PIPELINE, result, [])).toBe(result);
  });

  it("marks each review body incomplete", () => {
    const out = markedIncomplete(PIPELINE, { review: { event: "COMMENT", body: "So far." } }, "turn") as {
      review: { body: string };
    };
    expect(out.review.body).toMatch(/^⚠️ \*\*incomplete: stopped at its turn limit\*\*.*\n\nSo far\.$/);
  });
});

describe("the repository's rules", () => {
  it("reads the section headed like Review guidelines, to the next heading of its level", () => {
    const md = [
      "# Project",
      "Build with make.",
      "## Review Guidelines",
      "- Flag SQL built by string concatenation.",
      "### Tests",
      "```",
      "# not a heading",
      "```",
      "## Releases",
      "Tag them.",
    ].join("\n");
    expect(reviewGuidelines(md)).toBe(
      "- Flag SQL built by string concatenation.\n### Tests\n```\n# not a heading\n```",
    );
    expect(reviewGuidelines("# Project\nNo review section.")).toBeUndefined();
  });

  it("reads .svc/review.yaml in the pipeline's shape, keeping its good rules", () => {
    expect(reviewFileRules('paths:\n  - { path: "a/**", ignore: true }\n  - { path: "/b" }')).toEqual({
      rules: [{ path: "a/**", ignore: true }],
      problems: [
        '".svc/review.yaml paths[1].path" must be relative to the repository root - write "b"',
        '".svc/review.yaml paths[1]" says nothing about its paths - add instructions: "..." or ignore: true',
      ],
    });
    expect(reviewFileRules("paths: [").problems[0]).toMatch(/^\.svc\/review\.yaml is not valid YAML/);
  });
});
