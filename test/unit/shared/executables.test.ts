import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findOnPath, isExecutable } from "../../../shared/executables.ts";

describe("findOnPath and isExecutable", () => {
  let first: string;
  let second: string;

  beforeAll(async () => {
    first = await mkdtemp(join(tmpdir(), "svc-path-a-"));
    second = await mkdtemp(join(tmpdir(), "svc-path-b-"));
    await writeFile(join(first, "tool"), "#!/bin/sh\n");
    await chmod(join(first, "tool"), 0o644); // present but not executable: skipped
    await writeFile(join(second, "tool"), "#!/bin/sh\n");
    await chmod(join(second, "tool"), 0o755);
  });
  afterAll(async () => {
    await rm(first, { recursive: true, force: true });
    await rm(second, { recursive: true, force: true });
  });

  it("finds the first executable of that name, as the shell does", () => {
    expect(findOnPath("tool", { PATH: [first, second].join(delimiter) })).toBe(join(second, "tool"));
    expect(isExecutable(join(second, "tool"))).toBe(true);
    expect(isExecutable(join(first, "tool"))).toBe(false);
  });

  it("skips empty and relative PATH entries and does not look up a name with a slash", () => {
    expect(findOnPath("tool", { PATH: ["", "relative/dir", first].join(delimiter) })).toBeUndefined();
    expect(findOnPath(`./tool`, { PATH: second })).toBeUndefined();
    expect(findOnPath("tool", {})).toBeUndefined();
  });
});
