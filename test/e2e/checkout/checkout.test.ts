import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { diskUsage } from "../../../shared/repo-cache.ts";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import {
  type CheckoutBed,
  HIDDEN,
  PRINCIPAL_TOKEN,
  PUBLIC,
  randomFiles,
  startCheckoutBed,
  WIDGETS,
} from "./checkout-bed.ts";

/** Every file under `dir` (links not followed), for a search of what nothing may hold. */
function filesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...filesUnder(path));
    else if (entry.isFile()) found.push(path);
  }
  return found;
}

/** The bytes of a repository's whole history as one pack: what a full clone downloads. */
function repositoryBytes(bare: string): number {
  return Number(
    execFileSync("sh", ["-c", "git rev-list --objects --all | git pack-objects --stdout -q | wc -c"], {
      cwd: bare,
    })
      .toString()
      .trim(),
  );
}

/**
 * Checkouts as github.com serves them, with real ingress and worker processes, a real git over
 * smart HTTP (`git http-backend`) on the loopback GitHub's origin, and the loopback GitHub App.
 */
describe("checkouts of real pull requests (fork pull requests, private repositories, the repository cache)", () => {
  let bed: CheckoutBed;
  let main: string;
  let mergeBase: string;
  let head7: string;
  const out = (invocation: string, file: string) => readFileSync(join(bed.out, invocation, file), "utf8");
  const finish = async (trigger: string) => {
    const row = await waitForTrigger(bed.pool, trigger);
    const { invocations, tasks, artifacts } = await lineage(bed.pool, trigger);
    return { row, invocation: invocations[0], tasks, artifacts };
  };

  beforeAll(async () => {
    bed = await startCheckoutBed(inject("adminDatabaseUrl"));
    // a history several times the tree: 6 commits each rewriting 60 files of 6 KB
    for (let i = 0; i < 6; i++) bed.commit(randomFiles("lib", 60, 4500), `lib ${i}`);
    mergeBase = bed.commit({ "src/a.txt": "a\n", "src/b.txt": "b\n" }, "sources");
    // the fork's pull request: changes src/a.txt and adds src/new.txt, from the merge base
    bed.git0(["checkout", "--quiet", "-b", "fork"]);
    head7 = bed.commit({ "src/a.txt": "a, changed by the fork\n", "src/new.txt": "new\n" }, "fork change");
    // main moves on meanwhile: what it changed is not the pull request's
    bed.git0(["checkout", "--quiet", "main"]);
    main = bed.commit({ "src/b.txt": "b, changed on main\n", "docs/later.md": "later\n" }, "main moves on");
    bed.push(WIDGETS, main, "refs/heads/main");
    // a fork's pull request: its head exists in the base repository only at refs/pull/7/head
    bed.push(WIDGETS, head7, "refs/pull/7/head");
  }, 120_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it("checks out a fork's pull request as the App: its exact head, a clean worktree, and a diff against its base that lists exactly its files", async () => {
    const { row, invocation, tasks, artifacts } = await finish(
      await bed.deliver("opened", { number: 7, head: head7, base: main }),
    );
    expect(row.status, JSON.stringify(invocation?.diagnostic)).toBe("completed");
    expect(out(invocation.id, "head").trim()).toBe(head7);
    expect(out(invocation.id, "diff").trim().split("\n").sort()).toEqual(["src/a.txt", "src/new.txt"]);
    expect(out(invocation.id, "status")).toBe("");
    expect(out(invocation.id, "base")).toBe(main);
    expect(out(invocation.id, "base-ref")).toBe("main");
    // fetched as the App, with a token for this repository that can read its contents and nothing else
    const exchange = bed.github.exchanges.find(
      (entry) => entry.permissions?.contents === "read" && Object.keys(entry.permissions).length === 1,
    );
    expect(exchange?.repositories).toEqual(["widgets"]);
    expect(bed.git.uploadPacks(WIDGETS).every((request) => request.token === exchange?.token)).toBe(true);
    // the trace shows the checkout as the run's first task, cold, with the bytes fetched
    expect(tasks[0]).toMatchObject({ kind: "checkout", seq: 0, status: "completed" });
    const log = artifacts.find((artifact) => artifact.name === "checkout.log");
    expect(log?.rendered).toMatch(
      new RegExp(`${WIDGETS} at ${head7}\\ncold: .*its fetch added \\d+ bytes to it`),
    );
    expect(log?.rendered).toContain(`merge base ${mergeBase}`);
  });

  it("no .git/config, worktree file, log line, artifact or step or agent environment holds the token", async () => {
    // the checkout's tokens: contents: read and nothing else (a setup step's GH_TOKEN is its own, read-only, by design)
    const tokens = bed.github.exchanges
      .filter((entry) => JSON.stringify(entry.permissions) === JSON.stringify({ contents: "read" }))
      .map((entry) => entry.token);
    expect(tokens.length).toBeGreaterThan(0);
    const secrets = [...tokens, PRINCIPAL_TOKEN, bed.appKey.split("\n")[1]!];
    const holders: string[] = [];
    // the configuration directory holds the workspaces: every run's worktree (with its .git) and the mirrors
    for (const file of [...filesUnder(join(bed.dir, "workspaces")), ...filesUnder(bed.out)]) {
      const text = readFileSync(file).toString("latin1");
      for (const secret of secrets) if (text.includes(secret)) holders.push(file);
    }
    const logs = [...bed.worker.output, ...bed.ingress.output].join("\n");
    for (const secret of secrets) if (logs.includes(secret)) holders.push("a log line");
    const { rows } = await bed.pool.query<{ text: string }>(
      "SELECT coalesce(rendered, '') || coalesce(path, '') AS text FROM svc.artifacts UNION ALL SELECT coalesce(diagnostic::text, '') FROM svc.tasks UNION ALL SELECT coalesce(diagnostic::text, '') FROM svc.invocations",
    );
    for (const { text } of rows)
      for (const secret of secrets) if (text.includes(secret)) holders.push("the database");
    expect(holders).toEqual([]);
    // nor does the clone's header reach a step or an agent
    const invocations = readdirSync(bed.out);
    expect(invocations.length).toBeGreaterThan(0);
    for (const invocation of invocations) {
      for (const file of ["setup-env", "agent-env"])
        expect(out(invocation, file)).not.toMatch(/GIT_CONFIG_(COUNT|KEY|VALUE)|extraheader/i);
    }
  });

  it("a second push of the pull request fetches under 5 % of the repository's bytes", async () => {
    const total = repositoryBytes(bed.git.pathOf(WIDGETS));
    bed.git0(["checkout", "--quiet", "fork"]);
    const head = bed.commit({ "src/a.txt": "a, changed again\n" }, "fork, second push");
    bed.git0(["checkout", "--quiet", "main"]);
    bed.push(WIDGETS, head, "refs/pull/7/head");
    const before = bed.git.bytesServed(WIDGETS);
    const { row, invocation, artifacts } = await finish(
      await bed.deliver("synchronize", { number: 7, head, base: main }),
    );
    expect(row.status, JSON.stringify(invocation?.diagnostic)).toBe("completed");
    expect(out(invocation.id, "head").trim()).toBe(head);
    const fetched = bed.git.bytesServed(WIDGETS) - before;
    expect(fetched).toBeGreaterThan(0);
    expect(fetched / total).toBeLessThan(0.05);
    expect(artifacts.find((artifact) => artifact.name === "checkout.log")?.rendered).toMatch(
      /^warm: from the host's mirror; its fetch added \d+ bytes to it$/m,
    );
  });

  it("four runs of one repository at once (four pipelines of one push) each check out their own worktree from one fetch", async () => {
    bed.git0(["checkout", "--quiet", "-B", "pr-40", mergeBase]);
    const head = bed.commit({ "src/pr-40.txt": "40\n" }, "pull request 40");
    bed.git0(["checkout", "--quiet", "main"]);
    bed.push(WIDGETS, head, "refs/pull/40/head");
    const fetchesBefore = bed.git.uploadPacks(WIDGETS).length;
    const trigger = await bed.deliver("reopened", { number: 40, head, base: main });
    await waitForTrigger(bed.pool, trigger);
    const { invocations, workloads } = await lineage(bed.pool, trigger);
    expect(invocations.map((invocation) => invocation.status)).toEqual([
      "completed",
      "completed",
      "completed",
      "completed",
    ]);
    const worktrees = new Set<string>();
    for (const invocation of invocations) {
      expect(out(invocation.id, "head").trim()).toBe(head);
      expect(out(invocation.id, "diff").trim()).toBe("src/pr-40.txt");
      const workload = workloads.find((row) => row.id === invocation.workload_id);
      worktrees.add(join(bed.dir, "workspaces", workload.id, "checkout"));
    }
    // four worktrees of their own, each a repository with its own objects
    expect(worktrees.size).toBe(4);
    for (const worktree of worktrees)
      expect(statSync(join(worktree, ".git", "objects")).isDirectory()).toBe(true);
    expect(bed.git.uploadPacks(WIDGETS).length - fetchesBefore).toBe(1);
  });

  it("four pull requests at once each check out their own head, sharing fetches: runs that arrive while one fetch is under way share the next", async () => {
    const heads: Record<number, string> = {};
    for (const number of [20, 21, 22, 23]) {
      bed.git0(["checkout", "--quiet", "-B", `pr-${number}`, mergeBase]);
      // 300 KB that does not compress: each head's fetch takes a while on a slow link
      const blob = randomFiles(`src/pr-${number}`, 1, 225_000);
      heads[number] = bed.commit(
        { [`src/pr-${number}.txt`]: `${number}\n`, ...blob },
        `pull request ${number}`,
      );
      bed.push(WIDGETS, heads[number]!, `refs/pull/${number}/head`);
    }
    bed.git0(["checkout", "--quiet", "main"]);
    const fetchesBefore = bed.git.uploadPacks(WIDGETS).length;
    // a 200 KB/s link: the first run's fetch lasts over a second, so the runs delivered with it
    // arrive while it is under way however the machine schedules them
    bed.git.pace(200_000);
    let ends: Awaited<ReturnType<typeof finish>>[];
    try {
      const triggers = await Promise.all(
        [20, 21, 22, 23].map((number) => bed.deliver("opened", { number, head: heads[number]!, base: main })),
      );
      ends = await Promise.all(triggers.map(finish));
    } finally {
      bed.git.pace(undefined);
    }
    for (const [index, number] of [20, 21, 22, 23].entries()) {
      const { row, invocation } = ends[index]!;
      expect(row.status, JSON.stringify(invocation?.diagnostic)).toBe("completed");
      expect(out(invocation.id, "head").trim()).toBe(heads[number]);
      expect(out(invocation.id, "diff").trim().split("\n").sort()).toEqual([
        `src/pr-${number}.txt`,
        `src/pr-${number}/file-0.txt`,
      ]);
    }
    // the first run to arrive fetches at once; those arriving meanwhile share one fetch after it
    expect(bed.git.uploadPacks(WIDGETS).length - fetchesBefore).toBeLessThanOrEqual(2);
  });

  it("a head the host does not have ends the run with setup_failed naming the commit and the refs tried", async () => {
    const missing = "0123456789abcdef0123456789abcdef01234567";
    const { row, invocation } = await finish(
      await bed.deliver("opened", { number: 30, head: missing, base: main }),
    );
    expect(row.status).toBe("error");
    expect(invocation.diagnostic).toMatchObject({ code: "setup_failed", field: "checkout" });
    expect(invocation.diagnostic.message).toContain(
      `has no commit ${missing} (tried the commit id and refs/pull/30/head)`,
    );
  });

  it("a head force-pushed away (still in the host's store, no ref reaches it) is refused, and the ref's new head is never taken for it", async () => {
    bed.git0(["checkout", "--quiet", "-B", "pr-50", mergeBase]);
    const old = bed.commit({ "src/pr-50.txt": "first\n" }, "pull request 50");
    bed.push(WIDGETS, old, "refs/pull/50/head");
    bed.git0(["checkout", "--quiet", "-B", "pr-50", mergeBase]);
    const rewritten = bed.commit({ "src/pr-50.txt": "rewritten\n" }, "pull request 50, force-pushed");
    bed.push(WIDGETS, rewritten, "refs/pull/50/head");
    bed.git0(["checkout", "--quiet", "main"]);
    const { row, invocation } = await finish(
      await bed.deliver("opened", { number: 50, head: old, base: main }),
    );
    expect(row.status).toBe("error");
    expect(invocation.diagnostic.message).toContain(
      `has no commit ${old} (tried the commit id and refs/pull/50/head)`,
    );
  });

  it("clones as a principal's token when the pipeline acts as one", async () => {
    const before = bed.git.requests.length;
    const { row, invocation } = await finish(
      await bed.deliver("edited", { number: 7, head: head7, base: main }),
    );
    expect(row.status, JSON.stringify(invocation?.diagnostic)).toBe("completed");
    expect(out(invocation.id, "head").trim()).toBe(head7);
    const asked = bed.git.requests.slice(before);
    // the mirror holds the head already: nothing needs fetching, so nothing is asked of the host
    expect(asked.every((request) => request.token === PRINCIPAL_TOKEN)).toBe(true);
  });

  it("a public repository the App is not installed on clones anonymously; a private one names the App and the permission it needs", async () => {
    bed.push(PUBLIC, main, "refs/heads/main");
    bed.push(PUBLIC, head7, "refs/pull/1/head");
    const open = await finish(
      await bed.deliver("opened", { repo: PUBLIC, number: 1, head: head7, base: main }),
    );
    expect(open.row.status, JSON.stringify(open.invocation?.diagnostic)).toBe("completed");
    expect(out(open.invocation.id, "head").trim()).toBe(head7);
    expect(bed.git.uploadPacks(PUBLIC).every((request) => request.token === undefined)).toBe(true);

    bed.push(HIDDEN, main, "refs/heads/main");
    bed.push(HIDDEN, head7, "refs/pull/1/head");
    const hidden = await finish(
      await bed.deliver("opened", { repo: HIDDEN, number: 1, head: head7, base: main }),
    );
    expect(hidden.row.status).toBe("error");
    expect(hidden.invocation.diagnostic).toMatchObject({ code: "setup_failed", field: "checkout" });
    expect(hidden.invocation.diagnostic.message).toMatch(
      /refused anonymous \(codehost\.app \(GitHub App 4343\) is not installed on acme\/hidden\) \(HTTP 401\): it needs the App installed on acme\/hidden with the "Contents: read" permission/,
    );
  });

  it("the worker's metrics count cold and warm checkouts, the bytes fetched and the cache's size on disk", async () => {
    const text = await (await fetch(bed.metricsUrl)).text();
    const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? Number.NaN);
    expect(value(/^svc_checkout_seconds_count\{kind="cold"\} (\d+)$/m)).toBeGreaterThanOrEqual(2);
    expect(value(/^svc_checkout_seconds_count\{kind="warm"\} (\d+)$/m)).toBeGreaterThanOrEqual(5);
    expect(value(/^svc_checkout_bytes_total (\d+)$/m)).toBeGreaterThan(0);
    const gauge = value(/^svc_repo_cache_bytes (\d+)$/m);
    const onDisk = diskUsage(join(bed.dir, "workspaces", ".repos"));
    // the gauge is read after each fetch; nothing fetched since the last one
    expect(gauge).toBeGreaterThan(0);
    expect(Math.abs(gauge - onDisk) / onDisk).toBeLessThan(0.05);
  });
});
