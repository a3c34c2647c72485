import { randomUUID } from "node:crypto";
import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBoss } from "../../../db/boss.ts";
import { lockGroups, nextInGroup } from "../../../db/concurrency-groups.ts";
import { claimRuns } from "../../../db/invocations.ts";
import { withTransaction } from "../../../db/transaction.ts";
import { insertTrigger } from "../../../db/triggers.ts";
import type { ConfigSnapshot } from "../../../shared/config/types.ts";
import { CredentialCooldowns } from "../../../worker/credentials/cooldowns.ts";
import { CredentialSecrets } from "../../../worker/credentials/secrets.ts";
import { dispatchTriggers } from "../../../worker/queue/dispatch.ts";
import { ensureWorkerQueues } from "../../../worker/queue/lanes.ts";
import { captureLogger, commandTarget, makeConfig, openTestBed, pipeline, type TestBed } from "./helpers.ts";

const GROUP = "pull_request:review:acme/widgets#7";

/**
 * The group rules in the database, one step at a time (the end-to-end tests run them through real
 * processes): which event of a group is the newest, what a claim may take, and what a run's end
 * hands on.
 */
describe("concurrency groups in the database", () => {
  let bed: TestBed;
  let boss: PgBoss;
  let config: ConfigSnapshot;
  const { logger } = captureLogger();

  beforeAll(async () => {
    bed = await openTestBed();
    config = makeConfig(bed.dir, {
      targets: { local: commandTarget("local", ["./bin/agent"]) },
      pipelines: {
        review: pipeline("review", {
          trigger: { webhook: ["review-hook"], codehost: [], tracker: [] },
          targets: ["local"],
          concurrency: { group: "pull_request", cancelInProgress: false },
        }),
      },
    });
    boss = await startBoss({ url: bed.database.url, supervise: false });
    await ensureWorkerQueues(boss, config);
  });

  afterAll(async () => {
    await boss?.stop({ graceful: false });
    await bed?.close();
  });

  /** A trigger of pull request #7, stored `ageSeconds` ago. */
  async function record(ageSeconds: number): Promise<string> {
    const { id } = await insertTrigger(bed.pool, {
      kind: "webhook",
      source: "review-hook",
      eventName: "review-hook",
      deliveryId: null,
      payloadJson: JSON.stringify({ repo: "acme/widgets", number: 7, sha: randomUUID() }),
    });
    await bed.pool.query(
      "UPDATE svc.triggers SET created_at = now() - make_interval(secs => $2) WHERE id = $1",
      [id, ageSeconds],
    );
    return id;
  }

  async function dispatch(triggerId: string, left = 0) {
    const deps = {
      ...{ pool: bed.pool, boss, config, logger },
      leaseSeconds: 10,
      cooldowns: await CredentialCooldowns.load(bed.pool, logger),
      secrets: await CredentialSecrets.resolve(config, bed.pool, {}),
    };
    return withTransaction(bed.pool, (client) =>
      dispatchTriggers(deps, client, [{ id: randomUUID(), data: { triggerId } }], { workerId: "w1", left }),
    );
  }

  async function runOf(triggerId: string) {
    const { rows } = await bed.pool.query(
      `SELECT i.* FROM svc.invocations i JOIN svc.workloads w ON w.id = i.workload_id WHERE w.trigger_id = $1`,
      [triggerId],
    );
    return rows[0];
  }

  it("an older event dispatched after a newer one is overtaken at once; the newer one is kept", async () => {
    const holder = await record(30);
    const older = await record(20);
    const newer = await record(10);
    await dispatch(holder, 1); // created running, held by w1
    await dispatch(newer);
    await dispatch(older);
    expect(await runOf(holder)).toMatchObject({ status: "running", concurrency_group: GROUP });
    expect(await runOf(newer)).toMatchObject({ status: "queued", diagnostic: null });
    expect(await runOf(older)).toMatchObject({
      status: "cancelled",
      diagnostic: {
        code: "superseded",
        message: `superseded by trigger ${newer} (a newer event of concurrency group ${GROUP})`,
      },
    });
    const { rows } = await bed.pool.query("SELECT status FROM svc.triggers WHERE id = $1", [older]);
    expect(rows[0].status).toBe("completed");
  });

  it("a claim takes a grouped run only under its group's lock and while nothing of its group runs", async () => {
    const waiting = (
      await bed.pool.query(
        "SELECT id FROM svc.invocations WHERE concurrency_group = $1 AND status = 'queued'",
        [GROUP],
      )
    ).rows[0].id as string;
    const claim = (groups: string[]) =>
      withTransaction(bed.pool, async (client) => {
        await lockGroups(client, groups);
        return claimRuns(client, [waiting], "w2", 60_000, groups);
      });
    // a job naming no group claims nothing (the reconcile rule sends one that does)
    expect(await claim([])).toEqual([]);
    // its group's holder still runs
    expect(await claim([GROUP])).toEqual([]);
    await bed.pool.query(
      "UPDATE svc.invocations SET status = 'completed' WHERE concurrency_group = $1 AND status = 'running'",
      [GROUP],
    );
    const [claimed] = await claim([GROUP]);
    expect(claimed?.invocation).toMatchObject({ id: waiting, status: "running", worker_id: "w2" });
  });

  it("a run's end hands the group to its newest waiting run, whatever order they were written in", async () => {
    // two waiting runs (a run released back to the queue behind a newer one): the newer event wins
    const first = await record(5);
    const second = await record(4);
    const third = await record(3);
    await dispatch(first); // waits behind the one w2 holds
    await dispatch(third); // supersedes `first`, waits
    await dispatch(second); // older than `third`: overtaken
    const thirdRun = await runOf(third);
    expect(thirdRun.status).toBe("queued");
    // the holder goes back to the queue, as a shutdown release does: two wait now
    await bed.pool.query(
      "UPDATE svc.invocations SET status = 'queued', worker_id = NULL WHERE concurrency_group = $1 AND status = 'running'",
      [GROUP],
    );
    const handed = await withTransaction(bed.pool, async (client) => {
      await lockGroups(client, [GROUP]);
      return nextInGroup(client, GROUP);
    });
    expect(handed.start?.id).toBe(thirdRun.id);
    expect(handed.superseded).toHaveLength(1);
    const { rows } = await bed.pool.query(
      "SELECT status, count(*)::int AS n FROM svc.invocations WHERE concurrency_group = $1 GROUP BY 1 ORDER BY 1",
      [GROUP],
    );
    expect(rows).toEqual([
      { status: "cancelled", n: 4 },
      { status: "completed", n: 1 },
      { status: "queued", n: 1 },
    ]);
  });

  it("never lets two invocations of one group be running, whatever writes them", async () => {
    await bed.pool.query(
      "UPDATE svc.invocations SET status = 'running' WHERE concurrency_group = $1 AND status = 'queued'",
      [GROUP],
    );
    await expect(
      bed.pool.query(
        `UPDATE svc.invocations SET status = 'running'
          WHERE id = (SELECT id FROM svc.invocations WHERE concurrency_group = $1 AND status = 'cancelled' LIMIT 1)`,
        [GROUP],
      ),
    ).rejects.toThrow(/invocations_one_running_per_group/);
  });
});
