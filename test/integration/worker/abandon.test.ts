import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type pg from "pg";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBoss } from "../../../db/boss.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { LOCAL_LANE } from "../../../shared/queues.ts";
import { type RunningWorker, startWorker } from "../../../worker/main.ts";
import { ensureWorkerQueues } from "../../../worker/queue/lanes.ts";
import { startTcpLink, type TcpLink } from "../../support/tcp-link.ts";
import {
  captureLogger,
  commandTarget,
  dispatchToLane,
  lineage,
  makeConfig,
  openTestBed,
  pipeline,
  type TestBed,
  waitFor,
  waitForTrigger,
  writeScript,
} from "./helpers.ts";

/**
 * A host cut off from Postgres (a link that resets every connection) while it runs an agent: its
 * lease fails, another worker takes the run and finishes it. The cut-off worker's agent ends while
 * it is still cut off; it cannot prove its claim, and when the link is mended the database says the
 * claim is gone. The run is abandoned, cleanly: it is not a failure of the worker's slot
 * (`worker.run_failed`), it records and publishes nothing, and the other worker's end stands.
 */
describe("worker: a run whose claim was lost across a partition is abandoned, not failed", () => {
  let bed: TestBed;
  let pool: pg.Pool;
  let boss: PgBoss;
  let dir: string;
  let config: ConfigSnapshot;
  let link: TcpLink;
  const workers: RunningWorker[] = [];
  const cutOff = captureLogger();
  const rescuer = captureLogger();

  beforeAll(async () => {
    bed = await openTestBed();
    ({ pool, dir } = bed);
    const agent = await writeScript(
      join(dir, "bin", "agent"),
      // waits to be let go, then answers, or fails when told to
      `#!/bin/sh\ncat > /dev/null\nwhile [ ! -f "${join(dir, "go")}" ]; do sleep 0.05; done\n` +
        `if [ -f "${join(dir, "fail")}" ]; then echo "the agent gave up" >&2; exit 3; fi\necho '{"done": true}'\n`,
    );
    config = makeConfig(dir, {
      worker: { concurrency: 1, graceMs: 1_000 },
      targets: { local: commandTarget("local", [agent]) },
      pipelines: {
        held: pipeline("held", {
          trigger: { webhook: ["hold-hook"], codehost: [], tracker: [] },
          targets: ["local"],
        }),
      },
    });
    boss = await startBoss({ url: bed.database.url, supervise: false });
    await ensureWorkerQueues(boss, config);
    const url = new URL(bed.database.url);
    link = await startTcpLink({ host: url.hostname, port: Number(url.port || 5432) });
  });

  afterAll(async () => {
    link?.mend();
    for (const worker of workers) await worker.stop(1_000).catch(() => {});
    await link?.close();
    await boss?.stop({ graceful: false });
    await bed?.close();
  });

  const eventsOf = (lines: string[], invocation: string) =>
    lines
      .map((line) => JSON.parse(line) as { event?: string; invocation?: string; error?: string })
      .filter((line) => line.invocation === invocation);

  /**
   * Runs a trigger on a worker behind the link, cuts the link, lets another worker take the run,
   * lets both agents end (answering, or failing when `fail`), mends the link, and returns what the
   * cut-off worker logged of the run and the run's lineage once the cut-off worker has ended it.
   */
  async function loseClaimAcrossPartition(fail: boolean) {
    await rm(join(dir, "go"), { force: true });
    if (fail) await writeFile(join(dir, "fail"), "");
    else await rm(join(dir, "fail"), { force: true });
    while (workers.length) await workers.pop()!.stop(1_000);
    cutOff.lines.length = 0;
    const trigger = await dispatchToLane(
      { pool, boss, config, logger: cutOff.logger },
      { source: "hold-hook" },
    );
    const invocation = (await lineage(pool, trigger)).invocations[0].id as string;
    const through = new URL(bed.database.url);
    through.host = link.address;
    workers.push(
      await startWorker({
        ...{ config, databaseUrl: through.href, logger: cutOff.logger },
        ...{ heartbeatMs: 500, staleAfterMs: 3_600_000, reapIntervalMs: 200 },
      }),
    );
    await waitFor(async () => {
      const { rows } = await pool.query("SELECT status FROM svc.tasks WHERE invocation_id = $1", [
        invocation,
      ]);
      return rows.some((row) => row.status === "running") ? true : undefined;
    }, "the agent to start on the worker behind the link");

    link.cut();
    const cutAt = Date.now();
    // what pg-boss's supervisor does to a lease that missed its heartbeats: fail it, for good
    const { rows: jobs } = await pool.query(
      "SELECT id, retry_count FROM pgboss.job WHERE name = $1 AND data->>'invocationId' = $2",
      [LOCAL_LANE, invocation],
    );
    await boss.fail(LOCAL_LANE, { id: jobs[0].id, retryCount: jobs[0].retry_count });
    workers.push(
      await startWorker({
        ...{ config, databaseUrl: bed.database.url, logger: rescuer.logger },
        ...{ heartbeatMs: 500, staleAfterMs: 3_600_000, reapIntervalMs: 200 },
      }),
    );
    await waitFor(async () => {
      const { rows } = await pool.query("SELECT attempts, status FROM svc.invocations WHERE id = $1", [
        invocation,
      ]);
      return rows[0].attempts === 2 && rows[0].status === "running" ? true : undefined;
    }, "the rescuer to run the second attempt");
    // past the lease's bound, so the cut-off worker must ask the database before it records its result
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 11_000 - (Date.now() - cutAt))));
    await writeFile(join(dir, "go"), "");
    expect((await waitForTrigger(pool, trigger)).status).toBe(fail ? "error" : "completed");
    // the cut-off worker's agent has ended too; give its end time to go wherever it goes, then mend
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    link.mend();
    await waitFor(
      async () =>
        eventsOf(cutOff.lines, invocation).some(
          (line) => line.event === "invocation.abandoned" || line.event === "worker.run_failed",
        )
          ? true
          : undefined,
      "the cut-off worker to end its run",
      20_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const logged = eventsOf(cutOff.lines, invocation);
    return { logged, events: logged.map((line) => line.event), after: await lineage(pool, trigger) };
  }

  it("an agent that answers while cut off waits for the database's verdict: claim_lost, then one abandoned, never worker.run_failed", async () => {
    const { events, after } = await loseClaimAcrossPartition(false);
    expect(events.filter((event) => event === "worker.run_failed")).toEqual([]);
    expect(events.filter((event) => event === "invocation.abandoned")).toHaveLength(1);
    expect(events).toContain("invocation.claim_lost");
    expect(events.indexOf("invocation.claim_lost")).toBeLessThan(events.indexOf("invocation.abandoned"));
    // the rescuer's end is the record: completed on attempt 2, its tasks not overwritten
    expect(after.invocations.map((row) => [row.status, row.attempts])).toEqual([["completed", 2]]);
    const agents = after.tasks.filter((task) => task.kind === "agent").map((task) => task.status);
    expect(agents.sort()).toEqual(["completed", "failed"]);
  }, 90_000);

  it("an agent that fails while cut off, its end unrecordable, is abandoned to its lease, never worker.run_failed", async () => {
    const { logged, events, after } = await loseClaimAcrossPartition(true);
    expect(events.filter((event) => event === "worker.run_failed")).toEqual([]);
    const abandoned = logged.filter((line) => line.event === "invocation.abandoned");
    expect(abandoned).toHaveLength(1);
    expect((abandoned[0] as { reason?: string }).reason).toMatch(/^its end could not be recorded: /);
    // the rescuer's end is the record: its own failure on attempt 2, not the cut-off worker's
    expect(after.invocations.map((row) => [row.status, row.attempts, row.diagnostic?.code])).toEqual([
      ["failed", 2, "agent_failed"],
    ]);
  }, 90_000);
});
