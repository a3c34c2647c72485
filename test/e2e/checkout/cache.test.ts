import { closeSync, mkdirSync, openSync, readdirSync, statSync, writeSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigSnapshot, Pipeline } from "../../../shared/config/types.ts";
import { cacheRoot, diskUsage } from "../../../shared/repo-cache.ts";
import { boundCache, mirrorPath, useMirror } from "../../../worker/checkout/cache.ts";
import { checkOutRepository } from "../../../worker/checkout/checkout.ts";
import type { EventContext } from "../../../worker/event/context.ts";
import { testGit } from "../../support/git.ts";
import { startGitHost } from "../../support/git-smart-http.ts";

/**
 * The repository cache's own rules, against the loopback git host (public repositories: nothing to
 * authenticate), with the worker's checkout called in process:
 * a size bound that evicts the least recently used mirror and never a busy one, and a mirror
 * corrupted on disk that is rebuilt instead of trusted.
 */
describe("the repository cache", () => {
  let dir: string;
  let config: ConfigSnapshot;
  const heads: Record<string, string> = {};
  const pipeline = { checkout: { submodules: false, lfs: false, paths: [] } } as unknown as Pipeline;
  const deps = () => ({ pool: undefined as unknown as pg.Pool, config });
  let runs = 0;

  let host: Awaited<ReturnType<typeof startGitHost>>;
  const source = (name: string) => `${host.url}/acme/${name}.git`;
  const checkOut = (name: string) => {
    const dest = join(dir, "runs", String(++runs), "checkout");
    mkdirSync(join(dest, ".."), { recursive: true });
    const context: EventContext = {
      repo: `acme/${name}`,
      sha: heads[name]!,
      branch: "main",
      outsider: false,
    };
    return checkOutRepository(deps(), {
      ...{ repo: `acme/${name}`, cloneUrl: source(name), context, pipeline, dest },
    }).then((result) => ({ result, dest }));
  };
  const mirrorOf = (name: string) => mirrorPath(cacheRoot(config.dir), `acme/${name}`, source(name));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-repo-cache-"));
    host = await startGitHost();
    const git = testGit(dir);
    for (const name of ["one", "two", "three"]) {
      const repo = join(dir, "sources", name);
      git(["init", "--quiet", "--initial-branch=main", repo]);
      // a few hundred KB of incompressible history each, so sizes are told apart from folder overhead
      for (let i = 0; i < 3; i++) {
        const { randomBytes } = await import("node:crypto");
        await writeFile(join(repo, `blob-${i}.bin`), randomBytes(100_000));
        git(["add", "."], repo);
        git(["commit", "--quiet", "-m", `${name} ${i}`], repo);
      }
      heads[name] = git(["rev-parse", "HEAD"], repo);
      git(["push", "--quiet", host.createRepo(`acme/${name}`), "main"], repo);
    }
    config = {
      dir: join(dir, "config"),
      repos: {},
      workspaces: {
        checkoutRetentionDays: 30,
        transcriptRetentionDays: 90,
        repoCache: { maxSizeBytes: 10 * 2 ** 30 },
      },
    } as unknown as ConfigSnapshot;
    mkdirSync(config.dir);
  });

  afterAll(async () => {
    host?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("checks out each repository's head from a mirror of its own", async () => {
    for (const name of ["one", "two", "three"]) {
      const { result, dest } = await checkOut(name);
      expect(result.head).toBe(heads[name]);
      expect(result.cold).toBe(true);
      expect(testGit(dir)(["rev-parse", "HEAD"], dest)).toBe(heads[name]);
      expect(statSync(join(mirrorOf(name), "HEAD")).isFile()).toBe(true);
    }
  });

  it("over max_size, evicts the least recently used mirror, and never a busy one", async () => {
    // used in the order three, one, two: three is the least recently used now
    for (const name of ["three", "one", "two"]) {
      await checkOut(name);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const root = cacheRoot(config.dir);
    const size = (name: string) => diskUsage(mirrorOf(name));
    const all = size("one") + size("two") + size("three");
    const release = await useMirror(mirrorOf("three"));
    let bound: Awaited<ReturnType<typeof boundCache>>;
    try {
      // room for two of the three: one must go, and three, the least recently used, is busy
      bound = await boundCache(root, all - size("one"));
    } finally {
      await release();
    }
    expect(bound.evicted).toEqual([mirrorOf("one")]);
    expect(statSync(join(mirrorOf("three"), "HEAD")).isFile()).toBe(true);
    expect(() => statSync(mirrorOf("one"))).toThrow(/ENOENT/);
    // the hold was a use of three: two is the least recently used now, and goes first
    const next = await boundCache(root, size("three"));
    expect(next.evicted).toEqual([mirrorOf("two")]);
    // an evicted repository is fetched anew by its next run
    const { result } = await checkOut("one");
    expect(result.cold).toBe(true);
  });

  it("rebuilds a mirror corrupted on disk instead of trusting it", async () => {
    await checkOut("two");
    const packs = join(mirrorOf("two"), "objects", "pack");
    const pack = readdirSync(packs).find((name) => name.endsWith(".pack"))!;
    // every byte past the header overwritten: each object of the pack is unreadable
    const size = statSync(join(packs, pack)).size;
    const fd = openSync(join(packs, pack), "r+");
    writeSync(fd, Buffer.alloc(size - 32, 0x5a), 0, size - 32, 12);
    closeSync(fd);
    const { result, dest } = await checkOut("two");
    expect(result.cold).toBe(true);
    expect(testGit(dir)(["rev-parse", "HEAD"], dest)).toBe(heads.two);
    expect(testGit(dir)(["fsck", "--no-progress"], dest)).toBe("");
    expect(testGit(dir)(["status", "--porcelain"], dest)).toBe("");
  });
});
