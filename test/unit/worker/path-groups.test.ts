import { describe, expect, it } from "vitest";
import { type ChangedFile, pathGroups } from "../../../worker/run/path-groups.ts";

const files = (entries: Record<string, number>): ChangedFile[] =>
  Object.entries(entries).map(([path, lines]) => ({ path, lines }));
const paths = (groups: ReturnType<typeof pathGroups>) =>
  groups.map((group) => group.files.map((f) => f.path));

describe("pathGroups: a large review split by path groups", () => {
  it("keeps each directory whole and packs neighbouring ones while the group stays at or under the limit", () => {
    const groups = pathGroups(
      files({
        "src/ui/b.ts": 3000,
        "db/m/1.sql": 2000,
        "src/api/a.ts": 4000,
        "docs/x.md": 1000,
        "src/api/b.ts": 4000,
        "src/ui/a.ts": 3000,
      }),
      10_000,
      8,
    );
    expect(paths(groups)).toEqual([
      ["db/m/1.sql", "docs/x.md"],
      ["src/api/a.ts", "src/api/b.ts"],
      ["src/ui/a.ts", "src/ui/b.ts"],
    ]);
    expect(groups.map((group) => group.lines)).toEqual([3000, 8000, 6000]);
  });

  it("splits a directory above the limit into runs of its files, and a file above it is a group of its own", () => {
    const groups = pathGroups(
      files({ "a/1.ts": 400, "a/2.ts": 400, "a/3.ts": 400, "a/4.ts": 1500, "a/5.ts": 100, "b/1.ts": 200 }),
      1000,
      8,
    );
    expect(paths(groups)).toEqual([["a/1.ts", "a/2.ts"], ["a/3.ts"], ["a/4.ts"], ["a/5.ts", "b/1.ts"]]);
    expect(groups.map((group) => group.lines)).toEqual([800, 400, 1500, 300]);
  });

  it("over the most groups, merges the two neighbours with the fewest lines together until the count fits", () => {
    const groups = pathGroups(files({ "a/x": 900, "b/x": 900, "c/x": 300, "d/x": 400, "e/x": 900 }), 1000, 3);
    // c and d are packed (700); of a+b (1800), b+cd (1600) and cd+e (1600) the first smallest is merged
    expect(paths(groups)).toEqual([["a/x"], ["b/x", "c/x", "d/x"], ["e/x"]]);
    expect(pathGroups(files({ "a/x": 5, "b/x": 5 }), 1, 1)).toHaveLength(1);
  });

  it("is deterministic whatever order the files come in, files before subdirectories", () => {
    const entries = { "a/z.ts": 10, "a/b/c.ts": 10, "a-b/d.ts": 10, "a/a.ts": 10 };
    const forward = pathGroups(files(entries), 15, 8);
    const backward = pathGroups(files(entries).reverse(), 15, 8);
    expect(paths(backward)).toEqual(paths(forward));
    expect(paths(forward)).toEqual([["a/a.ts"], ["a/z.ts"], ["a/b/c.ts"], ["a-b/d.ts"]]);
  });

  it("every file is in exactly one group", () => {
    const many = Array.from({ length: 60 }, (_, i) => ({
      path: `d${i % 7}/f${i}.ts`,
      lines: (i * 37) % 500,
    }));
    const groups = pathGroups(many, 1200, 5);
    expect(groups.length).toBeLessThanOrEqual(5);
    expect(groups.flatMap((group) => group.files.map((f) => f.path)).sort()).toEqual(
      many.map((f) => f.path).sort(),
    );
  });
});
