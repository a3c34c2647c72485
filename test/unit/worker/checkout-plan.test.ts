import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CheckoutError, safeRefName, wantsOf } from "../../../worker/checkout/checkout.ts";
import { planWorktree } from "../../../worker/checkout/worktree.ts";
import type { EventContext } from "../../../worker/event/context.ts";
import { testGit } from "../../support/git.ts";

const SHA = "a".repeat(40);
const BASE = "b".repeat(40);

function context(fields: Partial<EventContext>): EventContext {
  return { repo: "acme/widgets", sha: "", branch: "", outsider: false, ...fields };
}

describe("what an event asks the mirror for", () => {
  it("a pull request's head by id, with refs/pull/<n>/head as the fallback, and its base", () => {
    const { wants, base } = wantsOf(
      context({ sha: SHA, branch: "feature", pull: true, number: 7, base: { sha: BASE, ref: "main" } }),
    );
    expect(wants).toEqual([
      { sha: SHA, remoteRef: "refs/pull/7/head", keepRef: "refs/pull/7/head" },
      { sha: BASE, remoteRef: "refs/heads/main", keepRef: "refs/heads/main", base: true },
    ]);
    expect(base).toEqual({ sha: BASE, ref: "main" });
  });

  it("a GitLab merge request's head falls back to refs/merge-requests/<iid>/head", () => {
    expect(wantsOf(context({ sha: SHA, pull: true, number: 12, gitlab: true })).wants).toEqual([
      { sha: SHA, remoteRef: "refs/merge-requests/12/head", keepRef: "refs/merge-requests/12/head" },
    ]);
  });

  it("a comment on a pull request (no SHA) takes the pull request's head ref", () => {
    expect(wantsOf(context({ pull: true, number: 3 })).wants).toEqual([
      { remoteRef: "refs/pull/3/head", keepRef: "refs/pull/3/head" },
    ]);
  });

  it("a push's commit by id, a branch without a SHA, the default branch without either", () => {
    expect(wantsOf(context({ sha: SHA, branch: "main" })).wants).toEqual([
      { sha: SHA, remoteRef: "refs/heads/main", keepRef: "refs/heads/main" },
    ]);
    expect(wantsOf(context({ branch: "release/1.2" })).wants).toEqual([
      { remoteRef: "refs/heads/release/1.2", keepRef: "refs/heads/release/1.2" },
    ]);
    expect(wantsOf(context({})).wants).toEqual([{ remoteRef: "HEAD", keepRef: "refs/svc/default" }]);
  });

  it("a hostile branch or SHA never reaches git as an option, a revision or a second refspec", () => {
    for (const branch of [
      "--upload-pack=touch /tmp/x",
      "a..b",
      "main:refs/heads/x",
      "x@{1}",
      "-x",
      "a b",
      "x/",
      "x.lock",
      "ref\nname",
    ]) {
      expect(safeRefName(branch), branch).toBe(false);
      expect(() => wantsOf(context({ branch }))).toThrow(CheckoutError);
    }
    for (const sha of ["HEAD", "--output=/tmp/x", "abc123", `${SHA}:refs/heads/x`, "main"]) {
      expect(() => wantsOf(context({ sha }))).toThrow(/is not a full commit id/);
    }
    // a base that is not plainly a commit and a branch is left out, not fetched
    expect(
      wantsOf(context({ sha: SHA, pull: true, number: 1, base: { sha: BASE, ref: "--all" } })).base,
    ).toBeUndefined();
    for (const branch of ["main", "feature/x-1", "dependabot/npm_and_yarn/got-16.1.0", "v1.2.3"])
      expect(safeRefName(branch), branch).toBe(true);
  });
});

describe("the depth a worktree needs, computed in the mirror", () => {
  let dir: string;
  const shas: Record<string, string> = {};
  const git = (...args: string[]) => testGit(dir)(args, dir);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-plan-"));
    git("init", "--quiet", "--initial-branch=main");
    const commit = async (name: string) => {
      await writeFile(join(dir, "README"), `${name}\n`);
      git("add", "README");
      git("commit", "--quiet", "-m", name);
      shas[name] = git("rev-parse", "HEAD");
    };
    for (const name of ["m1", "m2", "m3"]) await commit(name);
    git("checkout", "--quiet", "-b", "feature");
    for (const name of ["f1", "f2"]) await commit(name);
    git("checkout", "--quiet", "main");
    for (const name of ["m4", "m5", "m6", "m7"]) await commit(name);
    git("checkout", "--quiet", "--orphan", "unrelated");
    await commit("u1");
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const mirror = () => join(dir, ".git");

  it("a head alone is one commit deep, or the pipeline's depth", async () => {
    expect(await planWorktree(mirror(), { head: shas.f2! }, {})).toEqual({ head: shas.f2, depth: 1 });
    expect((await planWorktree(mirror(), { head: shas.f2! }, { depth: 10 })).depth).toBe(10);
    expect((await planWorktree(mirror(), { head: shas.f2! }, { depth: "full" })).depth).toBeUndefined();
  });

  it("a pull request reaches its merge base from the head and from the base", async () => {
    const plan = await planWorktree(mirror(), { head: shas.f2!, base: { sha: shas.m7!, ref: "main" } }, {});
    expect(plan.mergeBase).toBe(shas.m3);
    // m4..m7 are four commits past the merge base: five deep reaches it
    expect(plan.depth).toBe(5);
  });

  it("unrelated histories have no merge base, and the head is still checked out", async () => {
    const plan = await planWorktree(mirror(), { head: shas.u1!, base: { sha: shas.m7!, ref: "main" } }, {});
    expect(plan.mergeBase).toBeUndefined();
    expect(plan.depth).toBe(1);
  });

  it("keeps a previous head only when it is an ancestor, and never hands git anything but a commit id", async () => {
    const marker = join(dir, "hostile-marker");
    expect((await planWorktree(mirror(), { head: shas.f2!, previous: shas.f1! }, {})).previous).toBe(shas.f1);
    expect((await planWorktree(mirror(), { head: shas.f2!, previous: shas.f1! }, {})).depth).toBe(2);
    expect(
      (await planWorktree(mirror(), { head: shas.f2!, previous: shas.m7! }, {})).previous,
    ).toBeUndefined();
    expect(
      (await planWorktree(mirror(), { head: shas.f2!, previous: "0".repeat(40) }, {})).previous,
    ).toBeUndefined();
    for (const previous of [`--output=${marker}`, "HEAD~1", "main"]) {
      expect((await planWorktree(mirror(), { head: shas.f2!, previous }, {})).previous).toBeUndefined();
    }
    await expect(readFile(marker)).rejects.toThrow(/ENOENT/);
  });
});
