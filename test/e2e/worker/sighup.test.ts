import { rm } from "node:fs/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "./processes.ts";

const TOKEN = "sighup-hook-token";

/**
 * The contract: the daemon reads one configuration snapshot, has no reload, and ignores SIGHUP, so
 * SIGHUP does not terminate it. A real worker process gets SIGHUP between two runs: it says so, keeps
 * running, and claims and runs the next trigger on the configuration it started with (the pipeline
 * file changed on disk meanwhile is not read).
 */
describe("a worker process and SIGHUP", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  const env: Record<string, string> = { HOOK_TOKEN: TOKEN };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    dir = await writeConfigDir(
      {
        "daemon.yaml": `webhooks:
  sources:
    hup-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
  echo: { runtime: command, command: ["./bin/answer"], timeout: 30s }
ask:
  targets: [echo]
worker:
  concurrency: 1
`,
        "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
        "bin/answer": `#!/bin/sh\ncat > /dev/null\necho "{\\"pid\\": $$}"\n`,
        "pipelines/hup.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [hup-hook]
targets: [echo]
instructions: Answer.
`,
      },
      ["bin/answer"],
    );
    env.SVC_CONFIG_DIR = dir;
    env.SVC_DATABASE_URL = database.url;
    ({ role: ingress, url } = await startIngress(env));
    worker = await startWorkerProcess(env);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("is ignored: the worker logs it, keeps running and claims the next trigger", async () => {
    const first = await postWebhook(url, "hup-hook", TOKEN, {});
    expect((await waitForTrigger(pool, first)).status).toBe("completed");
    const workerId = (await lineage(pool, first)).invocations[0].worker_id as string;

    worker.child.kill("SIGHUP");
    await worker.waitForLog((line) => line.event === "worker.sighup_ignored", "the worker to note SIGHUP");
    // a reload would read this; the worker must not: it has one snapshot for its whole life
    await rm(`${dir}/pipelines/hup.yaml`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(worker.child.exitCode).toBeNull();
    expect(worker.child.signalCode).toBeNull();

    const second = await postWebhook(url, "hup-hook", TOKEN, {});
    expect((await waitForTrigger(pool, second)).status).toBe("completed");
    const { invocations } = await lineage(pool, second);
    expect(invocations.map((row) => [row.status, row.worker_id])).toEqual([["completed", workerId]]);
    expect(worker.logs.filter((line) => line.event === "worker.started")).toHaveLength(1);
    expect(worker.child.exitCode).toBeNull();
  }, 90_000);
});
