import type pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { countAttempt, listDeliveries, openDelivery } from "../../../db/output-deliveries.ts";
import { newId } from "../../../shared/ids.ts";
import { CodehostPublisher, codehostClient } from "../../../worker/outputs/codehost.ts";
import { ClaimLostError, deliver } from "../../../worker/outputs/delivery.ts";
import { stampBody } from "../../../worker/outputs/render.ts";
import { type FakeGitHub, startFakeGitHub } from "../../e2e/outputs/fake-github.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { captureLogger } from "../worker/helpers.ts";

const TOKEN = "ghs_integrationToken0001";
const REF = { owner: "acme", repo: "widgets", number: 5 };
const THREAD = "acme/widgets#5";

describe("delivering one output exactly once (real Postgres, fake GitHub on loopback)", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let github: FakeGitHub;
  let publisher: CodehostPublisher;
  const { logger, lines } = captureLogger();

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = createPool(database.url, { max: 3 });
    await migrate(pool);
    github = await startFakeGitHub({ users: { [TOKEN]: "svc-bot" } });
    publisher = new CodehostPublisher(codehostClient({ apiUrl: github.url, token: TOKEN, logger }), TOKEN);
  });

  afterAll(async () => {
    await pool?.end();
    await database?.drop();
    await github?.close();
  });

  async function invocation(): Promise<string> {
    const workload = newId("workload");
    const id = newId("invocation");
    await pool.query(
      "INSERT INTO svc.workloads (id, trigger_id, pipeline, status, workspace) VALUES ($1, NULL, 'p', 'open', '/tmp')",
      [workload],
    );
    await pool.query("INSERT INTO svc.invocations (id, workload_id, status) VALUES ($1, $2, 'running')", [
      id,
      workload,
    ]);
    return id;
  }

  const stamp = (inv: string) => ({
    pipeline: "p",
    version: "1.0.0",
    origin: inv,
    invocation: inv,
    seal: `seal-${inv.slice(-8)}`,
  });

  function work(inv: string, key = "comment") {
    return {
      invocationId: inv,
      key,
      handler: "codehost.comment",
      find: () => publisher.findComment(REF, stamp(inv), key),
      post: () => publisher.postComment(REF, stampBody("hello", stamp(inv), key)),
    };
  }

  const posts = () => github.requests.filter((r) => r.method === "POST").length;

  it("a delivery already sent is not sent again when the same invocation runs again", async () => {
    const inv = await invocation();
    const first = await deliver(pool, logger, work(inv));
    const before = posts();
    const again = await deliver(pool, logger, work(inv));
    expect(first).toMatchObject({ status: "sent", reused: false });
    expect(again).toMatchObject({
      status: "sent",
      reused: true,
      remote: first.status === "sent" ? first.remote : {},
    });
    expect(posts()).toBe(before);
  });

  it("a worker killed between posting and recording: the next attempt finds the marker and posts nothing", async () => {
    const inv = await invocation();
    // the dead worker opened the row, counted its attempt and posted; the host stored the comment
    await openDelivery(pool, { invocationId: inv, key: "comment", handler: "codehost.comment" });
    await countAttempt(pool, inv, "comment");
    const stored = await publisher.postComment(REF, stampBody("hello", stamp(inv), "comment"));
    const before = posts();
    const outcome = await deliver(pool, logger, work(inv));
    expect(outcome).toMatchObject({ status: "sent", reused: true, remote: stored });
    expect(posts()).toBe(before);
    expect(github.comments.get(THREAD)!.filter((c) => c.body.includes(inv))).toHaveLength(1);
    expect(await listDeliveries(pool, [inv])).toMatchObject([
      { status: "sent", attempts: 1, remote_id: stored.id, remote_url: stored.url },
    ]);
  });

  it("a run that loses its claim while a post is being retried posts nothing more", async () => {
    const inv = await invocation();
    // the first post fails (a partition, say); by the retry the run's lease has failed elsewhere
    github.failOnce(`/issues/${REF.number}/comments`);
    let held = true;
    const before = posts();
    const outcome = deliver(pool, logger, {
      ...work(inv),
      stillHeld: async () => {
        const now = held;
        held = false;
        return now;
      },
    });
    await expect(outcome).rejects.toBeInstanceOf(ClaimLostError);
    expect(posts()).toBe(before + 1);
    expect(github.comments.get(THREAD)?.filter((c) => c.body.includes(inv)) ?? []).toHaveLength(0);
  });

  it("a marker of another key or invocation is not adopted", async () => {
    const inv = await invocation();
    await openDelivery(pool, { invocationId: inv, key: "summary", handler: "codehost.comment" });
    await countAttempt(pool, inv, "summary");
    await publisher.postComment(REF, stampBody("other key", stamp(inv), "comment-x"));
    const before = posts();
    expect(await deliver(pool, logger, work(inv, "summary"))).toMatchObject({
      status: "sent",
      reused: false,
    });
    expect(posts()).toBe(before + 1);
    expect(lines.join("\n")).not.toContain(TOKEN);
  });
});
