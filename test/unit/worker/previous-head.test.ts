import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAncestorOfHead } from "../../../worker/run/workspace.ts";
import { testGit } from "../../support/git.ts";

describe("is the group's previous head an ancestor of this checkout's HEAD", () => {
  let dir: string;
  const shas: Record<string, string> = {};
  const git = (...args: string[]) => testGit(dir)(args, dir);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-ancestor-"));
    git("init", "--quiet", "--initial-branch=main");
    for (const name of ["first", "second"]) {
      await writeFile(join(dir, "README"), `${name}\n`);
      git("add", "README");
      git("commit", "--quiet", "-m", name);
      shas[name] = git("rev-parse", "HEAD");
    }
    git("checkout", "--quiet", "-b", "other", shas.first!);
    await writeFile(join(dir, "README"), "other\n");
    git("commit", "--quiet", "-am", "other");
    shas.other = git("rev-parse", "HEAD");
    git("checkout", "--quiet", "main");
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("is for an earlier commit of HEAD's line and HEAD itself", async () => {
    expect(await isAncestorOfHead(dir, shas.first!)).toBe(true);
    expect(await isAncestorOfHead(dir, shas.second!)).toBe(true);
  });

  it("is not for a commit on another line, one the clone lacks, or no clone", async () => {
    expect(await isAncestorOfHead(dir, shas.other!)).toBe(false);
    expect(await isAncestorOfHead(dir, "0".repeat(40))).toBe(false);
    expect(await isAncestorOfHead(join(dir, "nowhere"), shas.first!)).toBe(false);
  });

  it("never hands git anything but a hex object name", async () => {
    const marker = join(dir, "written-by-git");
    expect(await isAncestorOfHead(dir, `--output=${marker}`)).toBe(false);
    expect(await isAncestorOfHead(dir, "HEAD~1")).toBe(false);
    expect(await isAncestorOfHead(dir, "main")).toBe(false);
  });
});
