import type pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createPool } from "../../../db/connect.ts";
import { migrate } from "../../../db/migrate.ts";
import { countAttempt, openDelivery } from "../../../db/output-deliveries.ts";
import { newId } from "../../../shared/ids.ts";
import { CodehostPublisher, codehostClient } from "../../../worker/outputs/codehost.ts";
import { deliver } from "../../../worker/outputs/delivery.ts";
import { marker, stampBody } from "../../../worker/outputs/render.ts";
import { stampOf } from "../../../worker/outputs/stamp.ts";
import { stickyBody, writeSticky } from "../../../worker/outputs/sticky.ts";
import { captureLogger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";

/**
 * Issue 55, finding 4: svc found a lost post of its own by the marker in its body, and a marker was
 * `<!-- svc:<invocation>:<key> -->`, with the invocation id public (the progress line links its
 * trace). Whoever could comment on the pull request wrote one into a comment of their own, and svc
 * adopted that comment: edited it as its sticky comment, or took its output as already sent and
 * posted nothing. Now svc adopts only what its own identity wrote, and its markers carry a seal (an
 * HMAC under a key in svc's database) that nobody else can compute.
 */
const SVC_TOKEN = "ghs_svcIdentityForgedMarkers01";
const MALLORY_TOKEN = "ghp_malloryCanCommentHere0001";
const REF = { owner: "acme", repo: "widgets", number: 5 };
const THREAD = "acme/widgets#5";

describe("a marker written by someone else is never svc's", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let github: FakeGitHub;
  let svcBot: CodehostPublisher;
  let mallory: CodehostPublisher;
  const { logger } = captureLogger();

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    pool = createPool(database.url, { max: 3 });
    await migrate(pool);
    github = await startFakeGitHub({ users: { [SVC_TOKEN]: "svc-bot", [MALLORY_TOKEN]: "mallory" } });
    const publisher = (token: string) =>
      new CodehostPublisher(codehostClient({ apiUrl: github.url, token, logger }), token);
    svcBot = publisher(SVC_TOKEN);
    mallory = publisher(MALLORY_TOKEN);
  });

  afterAll(async () => {
    await pool?.end();
    await database?.drop();
    await github?.close();
  });

  async function run() {
    const workload = newId("workload");
    const invocation = newId("invocation");
    await pool.query(
      "INSERT INTO svc.workloads (id, trigger_id, pipeline, status, workspace) VALUES ($1, NULL, 'pr-review', 'open', '/tmp')",
      [workload],
    );
    await pool.query("INSERT INTO svc.invocations (id, workload_id, status) VALUES ($1, $2, 'running')", [
      invocation,
      workload,
    ]);
    const stamp = await stampOf(pool, {
      pipeline: { name: "pr-review", version: "1.0.0" },
      origin: invocation,
      invocation,
    });
    return { invocation, stamp };
  }
  const patches = () => github.requests.filter((request) => request.method === "PATCH");
  const byLogin = (login: string) =>
    (github.comments.get(THREAD) ?? []).filter((comment) => comment.user.login === login);

  it("the seal: a marker holds a value computed from svc's own key, not from the public invocation id", async () => {
    const { invocation, stamp } = await run();
    expect(stamp.seal).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(marker(stamp, "summary")).toBe(`<!-- svc:${invocation}:summary:${stamp.seal} -->`);
    // the same key for every worker, kept in the database
    expect(
      (await stampOf(pool, { pipeline: { name: "x", version: "1" }, origin: "o", invocation })).seal,
    ).toBe(stamp.seal);
  });

  it("a sticky comment with no record yet: an outsider's comment with the run's marker is not taken over", async () => {
    const { invocation, stamp } = await run();
    // mallory writes the run's exact marker (copied from svc's own post, say) into her comment
    const forged = await mallory.postComment(REF, `✅ Safe to merge\n${marker(stamp, "summary")}`);
    const write = {
      pipeline: "pr-review",
      ref: REF,
      key: "summary",
      invocation,
      seal: stamp.seal,
      sha: null,
    };
    const before = patches().length;
    const remote = await writeSticky(
      pool,
      svcBot,
      write,
      stickyBody("The review.", stamp, "summary"),
      "result",
    );
    expect(remote.id).not.toBe(forged.id);
    expect(patches()).toHaveLength(before);
    const own = byLogin("svc-bot").filter((comment) => comment.body.includes(invocation));
    expect(own.map((comment) => String(comment.id))).toEqual([remote.id]);
    expect(byLogin("mallory").find((comment) => String(comment.id) === forged.id)!.body).toContain(
      "✅ Safe to merge",
    );
  });

  it("a retried output is not taken as sent from an outsider's copy of its marker", async () => {
    const { invocation, stamp } = await run();
    // the first attempt's answer was lost: the next attempt looks for the marker before posting
    await openDelivery(pool, { invocationId: invocation, key: "review", handler: "codehost.comment" });
    await countAttempt(pool, invocation, "review");
    await mallory.postComment(REF, `nothing to see\n${marker(stamp, "review")}`);
    const outcome = await deliver(pool, logger, {
      invocationId: invocation,
      key: "review",
      handler: "codehost.comment",
      find: () => svcBot.findComment(REF, stamp, "review"),
      post: () => svcBot.postComment(REF, stampBody("Two findings.", stamp, "review")),
    });
    expect(outcome).toMatchObject({ status: "sent", reused: false });
    expect(byLogin("svc-bot").filter((comment) => comment.body.includes("Two findings."))).toHaveLength(1);
  });

  it("an unsealed marker, even in svc's own comment (a model can write one), is not the run's", async () => {
    const { invocation, stamp } = await run();
    await svcBot.postComment(REF, `quoted by the model: <!-- svc:${invocation}:notes -->`);
    expect(await svcBot.findComment(REF, stamp, "notes")).toBeUndefined();
    // and svc's own lost post, sealed, is found
    const lost = await svcBot.postComment(REF, stampBody("Notes.", stamp, "notes"));
    expect(await svcBot.findComment(REF, stamp, "notes")).toMatchObject({ id: lost.id });
  });
});
