import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type FakeSlack, startFakeSlack } from "../outputs/fake-slack.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "./processes.ts";

const TOKEN = "lease-hook-token";
const BOT_TOKEN = "xoxb-lease-bot";

/**
 * A worker frozen mid-run (SIGSTOP: it can neither heartbeat nor answer, like a host cut off the
 * network) loses its run through pg-boss's job heartbeat: the run's lease misses its heartbeats,
 * pg-boss fails it into the lost-lease queue, and the other worker's sweeper queues the run again.
 * When the frozen worker comes back (SIGCONT) its agent has finished, but its lease is gone: it
 * records nothing over the new attempt and publishes nothing. The stale-heartbeat backstop is set
 * out of reach, so only the lease can move the run.
 */
describe("run leases through pg-boss's job heartbeat, with real worker processes", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let slack: FakeSlack;
  let ingress: RoleProcess;
  let url: string;
  const workers: RoleProcess[] = [];
  const env: Record<string, string> = {
    HOOK_TOKEN: TOKEN,
    CHAT_BOT_TOKEN: BOT_TOKEN,
    SVC_WORKER_STALE_MS: "600000",
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    slack = await startFakeSlack({ tokens: [BOT_TOKEN], channels: ["C0RELEASE"] });
    dir = await writeConfigDir(
      {
        "daemon.yaml": `webhooks:
  sources:
    announce-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
  announcer: { runtime: command, command: ["./bin/announce"], timeout: 60s }
ask:
  targets: [announcer]
channels:
  chat:
    api_url: ${slack.url}
    bots:
      releasebot: { token: "\${CHAT_BOT_TOKEN}" }
worker:
  concurrency: 1
  heartbeat: 1s
`,
        "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
        // every attempt notes its start, takes 4 s, then answers
        "bin/announce": `#!/bin/sh\ncat > /dev/null\necho "$$" >> "$HOME/attempts.log"\nsleep 4\necho '{"announcement": {"text": "Release 2.0 is out"}}'\n`,
        "pipelines/announce.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [announce-hook]
targets: [announcer]
instructions: Announce the release.
result:
  schema:
    type: object
    properties:
      announcement: { $ref: svc://schemas/chat/message/v1 }
    required: [announcement]
outputs:
  announcement:
    handler: chat.message
    config: { bot: releasebot, channel: C0RELEASE }
`,
      },
      ["bin/announce"],
    );
    env.HOME = dir;
    env.SVC_CONFIG_DIR = dir;
    env.SVC_DATABASE_URL = database.url;
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    for (const worker of workers) {
      worker.child.kill("SIGCONT");
      await worker.stop("SIGKILL");
    }
    await ingress?.stop();
    await pool?.end();
    await slack?.close();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("a frozen worker's run moves to another worker once its lease fails, and the frozen one, back, publishes nothing", async () => {
    const frozen = await startWorkerProcess(env);
    workers.push(frozen);
    const id = await postWebhook(url, "announce-hook", TOKEN, {});
    const started = await waitFor(async () => {
      const found = await lineage(pool, id);
      const attempts = (await readFile(join(dir, "attempts.log"), "utf8").catch(() => "")).trim();
      return found.invocations[0]?.status === "running" && attempts ? found : undefined;
    }, "the first attempt's agent to start");
    const invocation = started.invocations[0]!.id as string;
    frozen.child.kill("SIGSTOP");
    const frozenAt = Date.now();

    const rescuer = await startWorkerProcess(env);
    workers.push(rescuer);
    await rescuer.waitForLog(
      (line) => line.event === "invocation.requeued" && line.invocation === invocation,
      "the lost run to be queued again",
      60_000,
    );
    const movedAfterMs = Date.now() - frozenAt;
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).toBe("completed");
    expect(slack.messages.filter((message) => message.channel === "C0RELEASE")).toHaveLength(1);

    // back from the "partition": its agent finished meanwhile, its lease did not survive
    frozen.child.kill("SIGCONT");
    await frozen.waitForLog(
      (line) => line.event === "invocation.abandoned" && line.invocation === invocation,
      "the frozen worker to abandon its run",
      30_000,
    );
    const claimLost = frozen.logs.find(
      (line) => line.event === "invocation.claim_lost" && line.invocation === invocation,
    );
    expect(claimLost).toBeDefined();
    // nothing from the first attempt lands: one post, one completed run held by the rescuer
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(slack.messages.filter((message) => message.channel === "C0RELEASE")).toHaveLength(1);
    const { rows } = await pool.query(
      "SELECT status, attempts, worker_id FROM svc.invocations WHERE id = $1",
      [invocation],
    );
    expect(rows[0]).toMatchObject({ status: "completed", attempts: 2 });
    const after = await lineage(pool, id);
    after.tasks.sort((a, b) => a.started_at - b.started_at || a.seq - b.seq);
    expect(after.tasks.map((task) => [task.kind, task.status, task.diagnostic?.code ?? null])).toEqual([
      ["agent", "failed", "worker_lost"],
      ["agent", "completed", null],
      ["result_check", "completed", null],
    ]);
    expect(after.tasks[0].diagnostic.message).toContain("stopped renewing its lease");
    const attempts = (await readFile(join(dir, "attempts.log"), "utf8")).trim().split("\n");
    expect(attempts).toHaveLength(2);
    // the documented bound: 3 missed heartbeats (pg-boss's floor: 10 s), one monitor pass, one sweep
    expect(movedAfterMs).toBeLessThan(10_000 + 3 * 1_000 + 5_000);
    console.log(
      `lease: the run was queued again ${(movedAfterMs / 1000).toFixed(1)} s after its worker froze`,
    );
  }, 120_000);
});
