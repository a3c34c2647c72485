import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBoss, transactionDb, wakeWorkers } from "../../../db/boss.ts";
import { withTransaction } from "../../../db/transaction.ts";
import { insertTrigger } from "../../../db/triggers.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { DISPATCH_QUEUE } from "../../../shared/queues.ts";
import { type RunningWorker, startWorker } from "../../../worker/main.ts";
import type { TestDatabase } from "../../support/database.ts";
import { testGit } from "../../support/git.ts";
import {
  captureLogger,
  commandTarget,
  fire,
  lineage,
  makeConfig,
  openTestBed,
  pipeline,
  type TestBed,
  waitFor,
  waitForTrigger,
  writeScript,
} from "./helpers.ts";

const ENV_DUMP = 'env > "$RUN_DIR/env.txt"; printf "%s" "$PAYLOAD_JSON" > "$SURFACE_DIR/payload.json"';

describe("worker: dispatch and run against real Postgres and real processes", () => {
  let bed: TestBed;
  let database: TestDatabase;
  let pool: pg.Pool;
  let boss: PgBoss;
  let worker: RunningWorker;
  let config: ConfigSnapshot;
  let dir: string;
  let bareRepo: string;
  let sha: string;
  const { logger, lines } = captureLogger();

  beforeAll(async () => {
    bed = await openTestBed();
    ({ database, pool, dir } = bed);
    // the agent: reads its prompt on stdin, chats on stdout, ends with its JSON result
    await writeScript(
      join(dir, "bin", "agent"),
      `#!/bin/sh
cat > "$RUN_DIR/prompt.txt"
echo "thinking about $EVENT_NAME"
echo '{"summary": "ok", "event": "'"$EVENT_NAME"'"}'
`,
    );
    await writeScript(
      join(dir, "bin", "bad-agent"),
      `#!/bin/sh\ncat >/dev/null\necho '{"review": {"event": "MAYBE", "body": "x"}}'\n`,
    );
    // forks a grandchild that would outlive a naive kill of the direct child
    await writeScript(
      join(dir, "bin", "slow-agent"),
      `#!/bin/sh
sleep 300 &
echo $! > "$RUN_DIR/grandchild.pid"
sleep 300
`,
    );
    bareRepo = join(dir, "widgets.git");
    const seed = join(dir, "seed");
    const git = testGit(dir);
    git(["init", "--quiet", "--initial-branch=main", seed]);
    await writeScript(join(seed, "README"), "first\n");
    git(["add", "README"], seed);
    git(["commit", "--quiet", "-m", "first"], seed);
    sha = git(["rev-parse", "HEAD"], seed);
    await writeScript(join(seed, "README"), "second\n");
    git(["commit", "--quiet", "-am", "second"], seed);
    git(["clone", "--quiet", "--bare", seed, bareRepo]);

    config = makeConfig(dir, {
      targets: {
        local: commandTarget("local", ["./bin/agent"]),
        strict: commandTarget("strict", ["./bin/bad-agent"]),
        slow: commandTarget("slow", ["./bin/slow-agent"], 1_500),
      },
      repos: { "acme/widgets": { cloneUrl: bareRepo, configured: true } },
      pipelines: {
        notes: pipeline("notes", {
          agent: "helper",
          trigger: { webhook: ["deploy-hook"], codehost: [], tracker: [] },
          setup: [{ run: ENV_DUMP }],
          env: { DEPLOY_ENV: "production" },
          targets: ["local"],
        }),
        review: pipeline("review", {
          trigger: {
            webhook: [],
            codehost: [{ events: ["pull_request.opened"], repos: ["acme/widgets"] }],
            tracker: [],
          },
          setup: [
            {
              run: 'cat "$WORKTREE/README" > "$SURFACE_DIR/readme.txt"; git -C "$WORKTREE" rev-parse HEAD > "$SURFACE_DIR/head.txt"',
            },
          ],
          retainCheckout: false,
        }),
        broken: pipeline("broken", {
          trigger: { webhook: ["broken-hook"], codehost: [], tracker: [] },
          setup: [
            { run: "echo first step" },
            { run: "echo about to fail >&2; exit 3" },
            { run: "touch should-not-run" },
          ],
        }),
        sleepy: pipeline("sleepy", {
          agent: "helper",
          trigger: { webhook: ["slow-hook"], codehost: [], tracker: [] },
          targets: ["slow"],
        }),
        strict: pipeline("strict", {
          agent: "helper",
          trigger: { webhook: ["strict-hook"], codehost: [], tracker: [] },
          targets: ["strict"],
          result: {
            schema: {
              type: "object",
              properties: { review: { $ref: "svc://schemas/codehost/review/v1" } },
              required: ["review"],
            },
          },
        }),
        tattle: pipeline("tattle", {
          setup: [
            {
              run: `printf '%s\\n' "$(printf '%s' "$PAYLOAD_JSON" | sed 's/.*"note":"\\([^"]*\\)".*/\\1/')" >> "${join(dir, "tattle.log")}"`,
            },
          ],
        }),
        session: pipeline("session", {
          agent: "helper",
          trigger: {
            webhook: [],
            codehost: [],
            tracker: [{ events: ["AgentSessionEvent.created"], repos: [] }],
          },
        }),
      },
    });
    boss = await startBoss({ url: database.url, supervise: false });
    worker = await startWorker({ config, databaseUrl: database.url, logger, heartbeatMs: 500 });
  });

  afterAll(async () => {
    await worker?.stop(1_000);
    await boss?.stop({ graceful: false });
    await bed?.close();
  });

  it("runs a webhook's pipeline: setup step with exactly the contract's environment, then the command agent", async () => {
    const payload = {
      deploy: "v1.2.3",
      note: "$(touch /tmp/svc-pwned-1); `id` | rm -rf / ; ' \" && echo pwned",
    };
    const id = await fire(pool, boss, {
      kind: "webhook",
      source: "deploy-hook",
      eventName: "deploy-hook",
      payload,
    });
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("completed");
    expect(trigger.diagnostic).toBeNull();
    const { workloads, invocations, tasks, artifacts } = await lineage(pool, id);
    expect(workloads).toHaveLength(1);
    expect(workloads[0].id).toMatch(/^run_/);
    expect(workloads[0].pipeline).toBe("notes");
    expect(invocations).toHaveLength(1);
    const [invocation] = invocations;
    expect(invocation.id).toMatch(/^inv_/);
    expect(invocation.status).toBe("completed");
    expect(invocation.target).toBe("local");
    expect(invocation.result).toEqual({ summary: "ok", event: "deploy-hook" });
    expect(tasks.map((t) => [t.kind, t.status])).toEqual([
      ["setup", "completed"],
      ["agent", "completed"],
      ["result_check", "skipped"],
    ]);
    expect(tasks.every((t) => t.id.startsWith("tsk_"))).toBe(true);
    expect(artifacts.map((a) => a.name).sort()).toEqual([
      "result.json",
      "setup-0.log",
      "surface/payload.json",
      "transcript",
    ]);
    expect(artifacts.find((a) => a.name === "transcript").rendered).toContain("thinking about deploy-hook");
    expect(JSON.parse(artifacts.find((a) => a.name === "surface/payload.json").rendered)).toEqual(payload);

    const runRoot = join(dir, "workspaces", workloads[0].id);
    const runDir = join(runRoot, invocation.id, "run");
    const env = Object.fromEntries(
      (await readFile(join(runDir, "env.txt"), "utf8"))
        .split("\n")
        .filter((line) => /^[A-Z_][A-Z0-9_]*=/.test(line))
        .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
    );
    expect(env.WORKTREE).toBe(join(runRoot, "checkout"));
    expect(env.RUN_DIR).toBe(runDir);
    expect(env.SURFACE_DIR).toBe(join(runRoot, invocation.id, "surface"));
    expect(env.REPO).toBe("");
    expect(env.SHA).toBe("");
    expect(env.BRANCH).toBe("");
    expect(env.EVENT_NAME).toBe("deploy-hook");
    expect(env.EVENT_SOURCE).toBe("webhook");
    expect(JSON.parse(env.PAYLOAD_JSON!)).toEqual(payload);
    expect(env.DEPLOY_ENV).toBe("production");
    expect(Object.keys(env).filter((name) => name.startsWith("SVC_"))).toEqual([]);
    expect(Object.keys(env).filter((name) => /DATABASE|PG|TOKEN|KEY/.test(name))).toEqual([]);
    expect(existsSync("/tmp/svc-pwned-1")).toBe(false);
    // the agent got the assembled prompt: persona, policy, instructions, event
    const prompt = await readFile(join(runDir, "prompt.txt"), "utf8");
    for (const part of ["You help.", "Be short.", "Run notes.", "deploy-hook", "v1.2.3"])
      expect(prompt).toContain(part);
  });

  it("clones a configured repository at the event's SHA, and removes the checkout when retain_checkout is false", async () => {
    const payload = {
      action: "opened",
      repository: { full_name: "acme/widgets" },
      pull_request: { head: { sha, ref: "feature" } },
    };
    const id = await fire(pool, boss, {
      kind: "codehost",
      source: "github",
      eventName: "pull_request.opened",
      payload,
    });
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
    const { workloads, artifacts } = await lineage(pool, id);
    expect(workloads.map((w) => w.pipeline)).toEqual(["review"]);
    expect(artifacts.find((a) => a.name === "surface/readme.txt").rendered).toBe("first\n");
    expect(artifacts.find((a) => a.name === "surface/head.txt").rendered.trim()).toBe(sha);
    expect(existsSync(join(dir, "workspaces", workloads[0].id, "checkout"))).toBe(false);
  });

  it("a head sha that is an option of git checkout is no option: the run fails setup_failed, no branch is made", async () => {
    // without the defence, `git checkout --orphan=pwned` succeeds and the run goes on on a new branch
    const payload = {
      action: "opened",
      repository: { full_name: "acme/widgets" },
      pull_request: { head: { sha: "--orphan=pwned", ref: "feature" } },
    };
    const id = await fire(pool, boss, {
      kind: "codehost",
      source: "github",
      eventName: "pull_request.opened",
      payload,
    });
    expect((await waitForTrigger(pool, id)).diagnostic.code).toBe("setup_failed");
    const { invocations } = await lineage(pool, id);
    expect(invocations[0].status).toBe("failed");
    expect(invocations[0].diagnostic).toMatchObject({
      code: "setup_failed",
      field: "checkout",
      message: 'checking out acme/widgets at --orphan=pwned failed: "--orphan=pwned" is not a full commit id',
    });
  });

  it("an event for another repository fires nothing: completed with no_matching_pipeline", async () => {
    const payload = { action: "opened", repository: { full_name: "acme/other" } };
    const id = await fire(pool, boss, {
      kind: "codehost",
      source: "github",
      eventName: "pull_request.opened",
      payload,
    });
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("completed");
    expect(trigger.diagnostic.code).toBe("no_matching_pipeline");
    expect((await lineage(pool, id)).workloads).toEqual([]);
  });

  it("a failing setup step fails the invocation with setup_failed naming the step, keeping each step's output", async () => {
    const id = await fire(pool, boss, { kind: "webhook", source: "broken-hook", eventName: "broken-hook" });
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("error");
    expect(trigger.diagnostic.code).toBe("setup_failed");
    const { invocations, tasks, artifacts } = await lineage(pool, id);
    expect(invocations[0].status).toBe("failed");
    expect(invocations[0].diagnostic).toMatchObject({ code: "setup_failed", field: "setup[1]" });
    expect(invocations[0].diagnostic.message).toContain("setup step 1");
    expect(tasks.map((t) => [t.status, t.exit_code])).toEqual([
      ["completed", 0],
      ["failed", 3],
    ]);
    expect(artifacts.find((a) => a.name === "setup-0.log").rendered).toBe("first step\n");
    expect(artifacts.find((a) => a.name === "setup-1.log").rendered).toBe("about to fail\n");
  });

  it("an agent past its target's timeout is killed with its whole process tree: trigger error, agent_timeout", async () => {
    const id = await fire(pool, boss, { kind: "webhook", source: "slow-hook", eventName: "slow-hook" });
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("error");
    expect(trigger.diagnostic).toEqual({ code: "agent_timeout", message: expect.stringContaining("slow") });
    const { workloads, invocations } = await lineage(pool, id);
    expect(invocations[0].diagnostic).toMatchObject({ code: "agent_timeout", target: "slow" });
    const pid = Number(
      await readFile(
        join(dir, "workspaces", workloads[0].id, invocations[0].id, "run", "grandchild.pid"),
        "utf8",
      ),
    );
    await waitFor(async () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, "the grandchild to be gone");
  });

  it("a result that misses result.schema gives result_invalid with the failing path", async () => {
    const id = await fire(pool, boss, { kind: "webhook", source: "strict-hook", eventName: "strict-hook" });
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("error");
    expect(trigger.diagnostic.code).toBe("result_invalid");
    const { invocations, tasks } = await lineage(pool, id);
    expect(invocations[0].diagnostic).toMatchObject({
      code: "result_invalid",
      path: "/review/event",
      target: "strict",
    });
    expect(tasks.at(-1)).toMatchObject({ kind: "result_check", status: "failed" });
  });

  it("a fire request or agent-session event naming an unconfigured agent is discarded with unknown_agent_reference", async () => {
    const manual = await fire(pool, boss, {
      kind: "manual",
      source: "notes",
      eventName: "notes",
      payload: { args: {}, agent: "ghost" },
    });
    const session = await fire(pool, boss, {
      kind: "tracker",
      source: "linear",
      eventName: "AgentSessionEvent.created",
      payload: { type: "AgentSessionEvent", action: "created", agentSession: { agent: { name: "phantom" } } },
    });
    for (const id of [manual, session]) {
      const trigger = await waitForTrigger(pool, id);
      expect(trigger.status).toBe("discarded");
      expect(trigger.diagnostic.code).toBe("unknown_agent_reference");
      expect((await lineage(pool, id)).workloads).toEqual([]);
    }
    const { rows } = await pool.query("SELECT id FROM svc.triggers WHERE status = 'error' AND id = ANY($1)", [
      [manual, session],
    ]);
    expect(rows).toEqual([]);
  });

  it("a manual fire runs the named pipeline; a redelivered dispatch job creates no second workload", async () => {
    const id = await fire(pool, boss, {
      kind: "manual",
      source: "notes",
      eventName: "notes",
      payload: { args: {} },
    });
    await boss.send(DISPATCH_QUEUE, { triggerId: id });
    await boss.send(DISPATCH_QUEUE, { triggerId: id });
    expect((await waitForTrigger(pool, id)).status).toBe("completed");
    // let the duplicates be consumed before counting
    await waitFor(async () => {
      const { rows } = await pool.query(
        "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'triggerId' = $2 AND state <> 'completed'",
        [DISPATCH_QUEUE, id],
      );
      return rows[0].n === 0;
    }, "duplicate dispatch jobs to be consumed");
    const { workloads, invocations } = await lineage(pool, id);
    expect(workloads.map((w) => w.pipeline)).toEqual(["notes"]);
    expect(invocations).toHaveLength(1);
  });

  it("a trigger that fails to dispatch is failed for a retry alone, whether it came alone or in a batch", async () => {
    // a real failure inside the dispatch transaction: Postgres refuses the workload of a poisoned trigger
    await pool.query(`CREATE TABLE public.poisoned (trigger_id text PRIMARY KEY);
      CREATE FUNCTION public.refuse_poisoned() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM public.poisoned WHERE trigger_id = NEW.trigger_id) THEN
          RAISE EXCEPTION 'poisoned trigger %', NEW.trigger_id;
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_poisoned BEFORE INSERT ON svc.workloads
        FOR EACH ROW EXECUTE FUNCTION public.refuse_poisoned();`);
    const failedFor = (id: string) =>
      lines.some((line) => line.includes('"event":"dispatch.failed"') && line.includes(id));
    // each run of the tattle pipeline's step appends its payload's note to a file outside any workspace
    const tattled = async () =>
      (await readFile(join(dir, "tattle.log"), "utf8").catch(() => "")).split("\n").filter(Boolean);
    const send = async (client: pg.PoolClient, note: string, poison: boolean) => {
      const { id } = await insertTrigger(client, {
        kind: "manual",
        source: "tattle",
        eventName: "tattle",
        deliveryId: null,
        payloadJson: JSON.stringify({ args: {}, note }),
        replayOf: null,
      });
      if (poison) await client.query("INSERT INTO public.poisoned VALUES ($1)", [id]);
      await boss.send(DISPATCH_QUEUE, { triggerId: id }, { db: transactionDb(client) });
      return id;
    };
    try {
      // alone: one job, dispatched without a savepoint first, then failed under one
      const alone = await withTransaction(pool, (client) => send(client, "alone", true));
      wakeWorkers(boss, DISPATCH_QUEUE);
      await waitFor(async () => failedFor(alone), "the lone poisoned dispatch to be failed");
      expect(
        lines.some((line) => line.includes('"event":"dispatch.retry_guarded"') && line.includes(alone)),
      ).toBe(true);
      const job = await pool.query(
        "SELECT state FROM pgboss.job WHERE name = $1 AND data->>'triggerId' = $2",
        [DISPATCH_QUEUE, alone],
      );
      expect(["retry", "active", "created"]).toContain(job.rows[0].state);
      expect((await lineage(pool, alone)).workloads).toEqual([]);
      // a rolled-back dispatch leaves no workspace behind and ran nothing
      const strayWorkspaces = async () => {
        const committed = new Set(
          (await pool.query("SELECT id FROM svc.workloads")).rows.map((row) => row.id as string),
        );
        // a dot-folder is the worker's own (its model gateway's socket), no run's
        return (await readdir(join(dir, "workspaces"))).filter(
          (name) => !name.startsWith(".") && !committed.has(name),
        );
      };
      await waitFor(
        async () => (await strayWorkspaces()).length === 0,
        "no workspace of a rolled-back dispatch",
      );
      expect(await tattled()).toEqual([]);
      // lifted at once: the job's retries (1 s, then backing off) are used up after a few seconds
      await pool.query("DELETE FROM public.poisoned WHERE trigger_id = $1", [alone]);
      expect((await waitForTrigger(pool, alone)).status).toBe("completed");
      expect(await tattled()).toEqual(["alone"]);

      // in a batch: the poisoned trigger fails alone, its neighbours dispatch and run
      const [poisoned, neighbours] = await withTransaction(pool, async (client) => {
        const bad = await send(client, "batched", true);
        const good: string[] = [];
        for (let i = 0; i < 3; i += 1) good.push(await send(client, `neighbour-${i}`, false));
        return [bad, good] as const;
      });
      wakeWorkers(boss, DISPATCH_QUEUE);
      for (const id of neighbours) expect((await waitForTrigger(pool, id)).status).toBe("completed");
      await waitFor(async () => failedFor(poisoned), "the batched poisoned dispatch to be failed");
      expect((await tattled()).sort()).toEqual(["alone", "neighbour-0", "neighbour-1", "neighbour-2"]);

      // once the cause is gone, the retry dispatches it, and each step has run exactly once
      await pool.query("DELETE FROM public.poisoned");
      expect((await waitForTrigger(pool, poisoned)).status).toBe("completed");
      expect((await tattled()).sort()).toEqual([
        "alone",
        "batched",
        "neighbour-0",
        "neighbour-1",
        "neighbour-2",
      ]);
      await waitFor(
        async () => (await strayWorkspaces()).length === 0,
        "no workspace of a rolled-back dispatch",
      );
    } finally {
      await pool.query(
        "DROP TRIGGER IF EXISTS refuse_poisoned ON svc.workloads; DROP FUNCTION IF EXISTS public.refuse_poisoned(); DROP TABLE IF EXISTS public.poisoned",
      );
    }
  });
});
