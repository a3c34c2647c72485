import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CheckoutSettings, ConfigSnapshot, Pipeline } from "../../../shared/config/types.ts";
import { CheckoutError, checkOutRepository } from "../../../worker/checkout/checkout.ts";
import type { EventContext } from "../../../worker/event/context.ts";
import { testGit } from "../../support/git.ts";
import { type GitHost, startGitHost } from "../../support/git-smart-http.ts";

const hasLfs = (() => {
  try {
    execFileSync("git", ["lfs", "version"], { stdio: "ignore" });
    return true;
  } catch {
    return false; // git-lfs is not installed on this machine
  }
})();

/**
 * A pipeline's `checkout:` settings against the loopback git host, with the worker's checkout
 * called in process: depth, a sparse checkout of a monorepo's directories, submodules (and a
 * hostile `.gitmodules`), and LFS without git-lfs.
 */
describe("checkout: settings of a pipeline", () => {
  let dir: string;
  let host: GitHost & { url: string };
  let config: ConfigSnapshot;
  let head: string;
  let runs = 0;
  const git = (args: string[], cwd?: string) => testGit(dir)(args, cwd);

  const checkOut = (repo: string, sha: string, settings: Partial<CheckoutSettings>, sandboxed = false) => {
    const dest = join(dir, "runs", String(++runs), "checkout");
    mkdirSync(join(dest, ".."), { recursive: true });
    const pipeline = {
      checkout: { submodules: false, lfs: false, paths: [], ...settings },
      // a sandboxed run's worktree copies its objects (by depth); a run on the host links the mirror's packs
      ...(sandboxed ? { sandbox: { image: "agent:default" } } : {}),
    } as unknown as Pipeline;
    const context: EventContext = { repo, sha, branch: "main", outsider: false };
    return checkOutRepository(
      { pool: undefined as unknown as pg.Pool, config },
      { repo, cloneUrl: `${host.url}/${repo}.git`, context, pipeline, dest },
    ).then((result) => ({ result, dest }));
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-checkout-settings-"));
    host = await startGitHost();
    config = {
      dir: join(dir, "config"),
      repos: {},
      workspaces: {
        checkoutRetentionDays: 30,
        transcriptRetentionDays: 90,
        repoCache: { maxSizeBytes: 2 ** 34 },
      },
    } as unknown as ConfigSnapshot;
    mkdirSync(config.dir);
    // a library repository, and a monorepo with it as a submodule (a relative URL, as on GitHub)
    const lib = join(dir, "lib");
    git(["init", "--quiet", "--initial-branch=main", lib]);
    await writeFile(join(lib, "lib.txt"), "library\n");
    git(["add", "."], lib);
    git(["commit", "--quiet", "-m", "lib"], lib);
    git(["push", "--quiet", host.createRepo("acme/lib"), "main"], lib);
    const mono = join(dir, "mono");
    git(["init", "--quiet", "--initial-branch=main", mono]);
    for (let i = 0; i < 5; i++) {
      for (const part of ["services/api", "services/web", "libs/shared"]) {
        mkdirSync(join(mono, part), { recursive: true });
        await writeFile(join(mono, part, "file.txt"), `${part} ${i}\n`);
      }
      await writeFile(join(mono, "README.md"), `readme ${i}\n`);
      git(["add", "."], mono);
      git(["commit", "--quiet", "-m", `commit ${i}`], mono);
    }
    git(
      ["-c", "protocol.file.allow=always", "submodule", "add", "--quiet", join(dir, "lib"), "vendor/lib"],
      mono,
    );
    git(["config", "--file", ".gitmodules", "submodule.vendor/lib.url", "../lib.git"], mono);
    git(["add", "."], mono);
    git(["commit", "--quiet", "-m", "vendor lib"], mono);
    head = git(["rev-parse", "HEAD"], mono);
    git(["push", "--quiet", host.createRepo("acme/mono"), "main"], mono);
    // a hostile superproject: its submodule reads a file:// path of the worker's host
    const hostile = join(dir, "hostile");
    git(["init", "--quiet", "--initial-branch=main", hostile]);
    git(
      ["-c", "protocol.file.allow=always", "submodule", "add", "--quiet", join(dir, "lib"), "stolen"],
      hostile,
    );
    git(["config", "--file", ".gitmodules", "submodule.stolen.url", `file://${join(dir, "lib")}`], hostile);
    git(["add", "."], hostile);
    git(["commit", "--quiet", "-m", "steal"], hostile);
    git(["push", "--quiet", host.createRepo("acme/hostile"), "main"], hostile);
  });

  afterAll(async () => {
    host?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("depth, of a sandboxed run's copied worktree: the head alone by default, at least n commits, or the whole history", async () => {
    const one = await checkOut("acme/mono", head, {}, true);
    expect(git(["rev-list", "--count", "HEAD"], one.dest)).toBe("1");
    const three = await checkOut("acme/mono", head, { depth: 3 }, true);
    expect(git(["rev-list", "--count", "HEAD"], three.dest)).toBe("3");
    const full = await checkOut("acme/mono", head, { depth: "full" }, true);
    expect(git(["rev-list", "--count", "HEAD"], full.dest)).toBe("6");
    expect(existsSync(join(full.dest, ".git", "shallow"))).toBe(false);
  });

  it("a run on the worker's host links the mirror's packs: the whole history at no copy, and nothing borrowed by alternates", async () => {
    const { dest } = await checkOut("acme/mono", head, {});
    expect(git(["rev-list", "--count", "HEAD"], dest)).toBe("6");
    expect(existsSync(join(dest, ".git", "shallow"))).toBe(false);
    expect(existsSync(join(dest, ".git", "objects", "info", "alternates"))).toBe(false);
    const packs = join(dest, ".git", "objects", "pack");
    const pack = readdirSync(packs).find((name) => name.endsWith(".pack"))!;
    // the mirror's file, not a copy: two names, one inode
    expect(statSync(join(packs, pack)).nlink).toBeGreaterThan(1);
    expect(git(["status", "--porcelain"], dest)).toBe("");
    expect(git(["rev-parse", "HEAD"], dest)).toBe(head);
    // the run's own gc rewrites its packs and unlinks its links; the mirror keeps its own
    git(["gc", "--quiet", "--prune=now"], dest);
    const again = await checkOut("acme/mono", head, {}, true);
    expect(git(["fsck", "--no-progress"], again.dest)).toBe("");
  });

  it("paths: a sparse checkout holds the named directories and the root's files only, and is clean", async () => {
    const { dest } = await checkOut("acme/mono", head, { paths: ["services/api"] });
    expect(readdirSync(dest).sort()).toEqual([".git", ".gitmodules", "README.md", "services"]);
    expect(readdirSync(join(dest, "services"))).toEqual(["api"]);
    expect(git(["status", "--porcelain"], dest)).toBe("");
    expect(git(["rev-parse", "HEAD"], dest)).toBe(head);
  });

  it("submodules: fetched beside the worktree; without them, the submodule's folder is empty", async () => {
    const without = await checkOut("acme/mono", head, {});
    expect(readdirSync(join(without.dest, "vendor", "lib"))).toEqual([]);
    const withModules = await checkOut("acme/mono", head, { submodules: true });
    expect(readdirSync(join(withModules.dest, "vendor", "lib")).sort()).toEqual([".git", "lib.txt"]);
    expect(git(["status", "--porcelain"], withModules.dest)).toBe("");
  });

  it("a .gitmodules that names a file:// path of the worker's host is refused", async () => {
    const hostileHead = git(["rev-parse", "HEAD"], join(dir, "hostile"));
    await expect(checkOut("acme/hostile", hostileHead, { submodules: true })).rejects.toThrow(CheckoutError);
    await expect(checkOut("acme/hostile", hostileHead, { submodules: true })).rejects.toThrow(
      /transport 'file' not allowed/,
    );
  });

  it.skipIf(hasLfs)(
    "lfs: without git-lfs on the worker's host, the run is told what to install",
    async () => {
      await expect(checkOut("acme/mono", head, { lfs: true })).rejects.toThrow(
        /checkout\.lfs needs git-lfs on the worker's host .*apt-get install git-lfs/,
      );
    },
  );
});
