import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { cacheRoot } from "../../../shared/repo-cache.ts";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { testGit } from "../../support/git.ts";
import { type GitHost, startGitHost } from "../../support/git-smart-http.ts";
import {
  engineSuiteUnavailable,
  pullTagged,
  startEngineWithImages,
  type TestEngine,
} from "../../support/sandbox-engine.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";

const HOOK = "checkout-sandbox-hook";
const unavailable = engineSuiteUnavailable();
if (unavailable) console.warn(`sandboxed checkout suite skipped: ${unavailable}`);

/**
 * A pull request's setup step that rewrites every git object file it can reach from its container
 * (loose objects and packs, wherever they are mounted), and whatever an `alternates` file of its
 * worktree names, then counts what it rewrote.
 */
const VANDAL_STEP = `n=0
for f in $(find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -type f -print 2>/dev/null | grep -E '/objects/(pack/|[0-9a-f]{2}/)'); do
  chmod u+w "$f" 2>/dev/null; if printf vandalised > "$f" 2>/dev/null; then n=$((n+1)); fi
done
for alt in $(find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -name alternates -print 2>/dev/null); do
  while read -r d; do find "$d" -type f -exec sh -c 'printf x > "$1"' _ {} \\; 2>/dev/null; done < "$alt"
done
echo "$n" > "$RUN_DIR/rewritten"`;

/**
 * No run can change the repository cache: a sandboxed step of a stranger's pull request that
 * rewrites every object file it can reach rewrites its own worktree's copies, and the next run's
 * checkout, written from the mirror, is intact (real dockerd, real git over smart HTTP).
 */
describe.skipIf(unavailable)("a sandboxed step against the repository cache", () => {
  let engine: TestEngine;
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let work: string;
  let host: GitHost & { url: string };
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  let head: string;
  let tree: string;

  beforeAll(async () => {
    const ready = await startEngineWithImages();
    engine = ready.engine;
    await pullTagged(engine, ready.registry, "agent:default");
    host = await startGitHost();
    work = await mkdtemp(join(tmpdir(), "svc-e2e-checkout-sandbox-"));
    const git = testGit(work);
    git(["init", "--quiet", "--initial-branch=main", work]);
    for (let i = 0; i < 3; i++) {
      await writeFile(join(work, `file-${i}.txt`), `${i}\n`.repeat(1000));
      git(["add", "."], work);
      git(["commit", "--quiet", "-m", `commit ${i}`], work);
    }
    head = git(["rev-parse", "HEAD"], work);
    tree = git(["rev-parse", "HEAD^{tree}"], work);
    git(["push", "--quiet", host.createRepo("acme/widgets"), "main"], work);
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    const pipeline = (name: string, extra: string) =>
      `version: 1.0.0\nagent: helper\ntrigger:\n  webhook: [${name}]\ntargets: [echo]\ninstructions: run\nretain_checkout: true\n${extra}`;
    dir = await writeConfigDir({
      "daemon.yaml": `webhooks:
  sources:
    vandal: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    reader: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
  echo:
    runtime: command
    command: ["/bin/sh", "-c", "cat > /dev/null; echo '{}'"]
    timeout: 60s
ask:
  targets: [echo]
repos:
  acme/widgets: { clone_url: ${host.url}/acme/widgets.git }
sandboxes:
  engine: { socket: ${engine.socket} }
`,
      "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
      "pipelines/vandal.yaml": pipeline(
        "vandal",
        `sandbox: {}\nsetup:\n  - run: ${JSON.stringify(VANDAL_STEP)}\n`,
      ),
      "pipelines/reader.yaml": pipeline("reader", ""),
    });
    const env = { HOOK_TOKEN: HOOK, SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url };
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    worker = await startWorkerProcess(env);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  }, 600_000);

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    host?.close();
    await engine?.stop();
    for (const path of [dir, work]) if (path) await rm(path, { recursive: true, force: true });
  });

  const fire = async (hook: string) => {
    const id = await postWebhook(url, hook, HOOK, { repo: "acme/widgets", sha: head, branch: "main" });
    await waitForTrigger(pool, id);
    return lineage(pool, id);
  };
  const checkoutOf = (found: Awaited<ReturnType<typeof lineage>>) =>
    join(dir, "workspaces", found.workloads[0].id, "checkout");
  const asRoot = (args: string[], cwd: string) =>
    execFileSync("git", ["-c", "safe.directory=*", ...args], {
      cwd,
      env: { PATH: process.env.PATH, HOME: work },
    })
      .toString()
      .trim();

  it("the step rewrites its own worktree's objects, and the next run's checkout from the mirror is intact", async () => {
    const vandal = await fire("vandal");
    expect(vandal.invocations[0].status, JSON.stringify(vandal.invocations[0].diagnostic)).toBe("completed");
    const rewritten = Number(
      await readFile(
        join(dir, "workspaces", vandal.workloads[0].id, vandal.invocations[0].id, "run", "rewritten"),
        "utf8",
      ),
    );
    // the attack ran: it reached the objects of its own worktree
    expect(rewritten).toBeGreaterThan(0);
    expect(() => asRoot(["fsck", "--no-progress"], checkoutOf(vandal))).toThrow();
    // no alternates: the worktree borrows nothing from the mirror
    await expect(readFile(join(checkoutOf(vandal), ".git", "objects", "info", "alternates"))).rejects.toThrow(
      /ENOENT/,
    );

    const reader = await fire("reader");
    expect(reader.invocations[0].status, JSON.stringify(reader.invocations[0].diagnostic)).toBe("completed");
    const checkout = checkoutOf(reader);
    expect(asRoot(["fsck", "--no-progress"], checkout)).toBe("");
    expect(asRoot(["rev-parse", "HEAD"], checkout)).toBe(head);
    expect(asRoot(["rev-parse", "HEAD^{tree}"], checkout)).toBe(tree);
    expect(asRoot(["status", "--porcelain"], checkout)).toBe("");
    // and the mirror itself is whole
    const mirror = join(
      cacheRoot(dir),
      host.url.replace(/^http:\/\//, "").replace(":", "_"),
      "acme",
      "widgets.git",
    );
    expect(asRoot(["fsck", "--no-progress", "--connectivity-only"], mirror)).toBe("");
  });
});
