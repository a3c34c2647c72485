import type { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureLaneQueue, startBoss } from "../../../db/boss.ts";
import { insertQueuedRuns } from "../../../db/invocations.ts";
import { listOrchestratedTasks } from "../../../db/orchestrated-tasks.ts";
import { insertTrigger } from "../../../db/triggers.ts";
import type { Target } from "../../../shared/config/types.ts";
import { newId } from "../../../shared/ids.ts";
import { laneQueue } from "../../../shared/queues.ts";
import type { ResolvedEvent } from "../../../worker/event/resolve.ts";
import { splitReview } from "../../../worker/run/review-split.ts";
import type { RunDeps } from "../../../worker/run/types.ts";
import { captureLogger, describeTestBed, makeConfig, pipeline } from "./helpers.ts";

const TARGET = {
  name: "agent",
  runtime: "command",
  command: ["true"],
  timeoutMs: 60_000,
} as unknown as Target;
const SPLIT = pipeline("split", {
  targets: ["agent"],
  skill: "review",
  principals: { reviewer: "codehost.principal.42" },
  orchestrator: { strategy: { type: "auto" }, targets: [], maxTasks: 3, maxParallel: 2 },
  review: { maxChangedLines: 100, paths: [{ path: "db/**", instructions: "DB-RULE" }] },
});
const FILES = [
  { path: "db/a.sql", lines: 60 },
  { path: "db/b.sql", lines: 30 },
  { path: "src/a.ts", lines: 80 },
  { path: "web/a.ts", lines: 50 },
  { path: "web/b.ts", lines: 40 },
];
const event = (outsider: boolean): ResolvedEvent => ({
  kind: "codehost",
  source: "github",
  eventName: "pull_request.opened",
  payload: {},
  context: { repo: "acme/gadgets", sha: "a".repeat(40), branch: "feature", outsider },
});

/**
 * svc's own tasks for a large review split by path groups (worker/run/review-split.ts): created
 * once per run, whatever retries it, with the pipeline's skill and the principal it requires only
 * where `create_task` would allow them.
 */
describe("a large review split by path groups", () => {
  const bed = describeTestBed();
  let boss: PgBoss;

  beforeAll(async () => {
    boss = await startBoss({ url: bed.database.url, max: 2, supervise: false });
    await ensureLaneQueue(boss, laneQueue("agent"), { agent: TARGET });
  });
  afterAll(async () => {
    await boss?.stop({ graceful: false });
  });

  async function runningInvocation(): Promise<string> {
    const invocation = newId("invocation");
    const { id: triggerId } = await insertTrigger(bed.pool, {
      ...{ kind: "manual", source: "split", eventName: "split", deliveryId: null, payloadJson: "{}" },
    });
    await insertQueuedRuns(bed.pool, [
      {
        ...{ workloadId: newId("workload"), triggerId, pipeline: "split", pipelineVersion: "1.0.0" },
        ...{ owner: null, workspace: bed.dir, invocationId: invocation, target: "agent" },
      },
    ]);
    await bed.pool.query("UPDATE svc.invocations SET status = 'running' WHERE id = $1", [invocation]);
    return invocation;
  }

  function deps(): RunDeps {
    const config = makeConfig(bed.dir, {
      targets: { agent: TARGET },
      skills: {
        review: {
          name: "review",
          description: "Reviews.",
          version: "1.0.0",
          body: "Review.",
          policies: [],
          principal: "reviewer",
          file: "skills/review/SKILL.md",
        },
      },
      pipelines: { split: SPLIT },
    });
    return { pool: bed.pool, records: bed.pool, config, logger: captureLogger().logger, boss } as never;
  }

  const review = {
    facts: { changed: { paths: FILES.map((f) => f.path), lines: 260, files: FILES } },
    rules: [],
  };
  const rules = {
    ...review,
    rules: [
      { rule: { path: "db/**", instructions: "DB-RULE" }, from: "review.paths of pipelines/split.yaml" },
    ],
  };

  it("creates one task per group once: a retried run reuses the tasks its first attempt created", async () => {
    const invocation = await runningInvocation();
    const large = { lines: 260, max: 100 };
    const first = await splitReview(
      deps(),
      { invocationId: invocation, pipeline: SPLIT },
      event(false),
      rules,
      large,
    );
    expect(first?.parts.map((part) => part.files)).toEqual([
      ["db/a.sql", "db/b.sql"],
      ["src/a.ts"],
      ["web/a.ts", "web/b.ts"],
    ]);
    const again = await splitReview(
      deps(),
      { invocationId: invocation, pipeline: SPLIT },
      event(false),
      rules,
      large,
    );
    expect(again).toEqual(first);
    const tasks = await listOrchestratedTasks(bed.pool, invocation);
    expect(tasks.map((task) => task.id)).toEqual(first!.parts.map((part) => part.taskId));
    // the first two start (max_parallel), the third waits its turn
    expect(tasks.map((task) => task.status)).toEqual(["queued", "queued", "pending"]);
    expect(tasks.map((task) => task.target)).toEqual(["agent", "agent", "agent"]);
    // a team member's run: the pipeline's skill with the principal it requires
    expect(tasks[0]!.spec).toMatchObject({ skill: "review", principal: "reviewer" });
    expect(tasks.map((task) => task.spec.instructions.includes("DB-RULE"))).toEqual([true, false, false]);
  });

  it("an outsider's run gives its tasks no principal, so not the skill that requires one", async () => {
    const invocation = await runningInvocation();
    const split = await splitReview(
      deps(),
      { invocationId: invocation, pipeline: SPLIT },
      event(true),
      review,
      { lines: 260, max: 100 },
    );
    expect(split?.parts).toHaveLength(3);
    const tasks = await listOrchestratedTasks(bed.pool, invocation);
    expect(tasks.every((task) => task.spec.skill === undefined && task.spec.principal === undefined)).toBe(
      true,
    );
  });

  it("a pipeline without an orchestrator, or changed files nobody listed, is not split", async () => {
    const invocation = await runningInvocation();
    const direct = { ...SPLIT, orchestrator: undefined };
    const large = { lines: 260, max: 100 };
    expect(
      await splitReview(deps(), { invocationId: invocation, pipeline: direct }, event(false), review, large),
    ).toBeUndefined();
    expect(
      await splitReview(
        deps(),
        { invocationId: invocation, pipeline: SPLIT },
        event(false),
        { facts: {}, rules: [] },
        large,
      ),
    ).toBeUndefined();
    expect(await listOrchestratedTasks(bed.pool, invocation)).toEqual([]);
  });
});
