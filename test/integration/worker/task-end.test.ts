import { describe, expect, it } from "vitest";
import { insertQueuedRuns } from "../../../db/invocations.ts";
import { failOpenTasks, finishTask, type RecordedTask, startTask } from "../../../db/tasks.ts";
import { insertTrigger } from "../../../db/triggers.ts";
import { diagnostic } from "../../../shared/diagnostics.ts";
import { newId } from "../../../shared/ids.ts";
import { describeTestBed } from "./helpers.ts";

/**
 * The agent's task end records its result check in the same statement (db/tasks.ts finishTask
 * `followedBy`), and only while the agent's task is still running: an attempt whose tasks the reaper
 * closed records no result check and no result artifact.
 */
describe("an agent task's end records its result check with it", () => {
  const bed = describeTestBed();

  async function runningAgentTask(): Promise<{ invocation: string; task: string; check: RecordedTask }> {
    const invocation = newId("invocation");
    const { id: triggerId } = await insertTrigger(bed.pool, {
      kind: "manual",
      source: "p",
      eventName: "p",
      deliveryId: null,
      payloadJson: "{}",
    });
    await insertQueuedRuns(bed.pool, [
      {
        workloadId: newId("workload"),
        triggerId,
        pipeline: "p",
        pipelineVersion: "1.0.0",
        owner: null,
        workspace: bed.dir,
        invocationId: invocation,
        target: null,
      },
    ]);
    const task = newId("task");
    await startTask(bed.pool, {
      id: task,
      invocationId: invocation,
      kind: "agent",
      name: "agent on t",
      seq: 0,
    });
    const checkId = newId("task");
    const check: RecordedTask = {
      row: { id: checkId, invocationId: invocation, kind: "result_check", name: "result.schema", seq: 1 },
      end: { status: "failed", diagnostic: diagnostic("result_invalid", "the result misses /summary") },
      artifact: {
        id: newId("artifact"),
        invocationId: invocation,
        taskId: checkId,
        name: "result.json",
        mediaType: "application/json",
        size: 3,
        path: "/nowhere/result.json",
        rendered: "{}\n",
      },
    };
    return { invocation, task, check };
  }

  const tasksOf = async (invocation: string) =>
    (
      await bed.pool.query(
        "SELECT kind, status, diagnostic->>'code' AS code FROM svc.tasks WHERE invocation_id = $1 ORDER BY seq",
        [invocation],
      )
    ).rows;
  const artifactsOf = async (invocation: string) =>
    (
      await bed.pool.query("SELECT name, task_id FROM svc.artifacts WHERE invocation_id = $1 ORDER BY name", [
        invocation,
      ])
    ).rows;

  it("writes the agent's end, the check and its artifact in one statement", async () => {
    const { invocation, task, check } = await runningAgentTask();
    await finishTask(bed.pool, task, { status: "completed", exitCode: 0 }, { followedBy: check });
    expect(await tasksOf(invocation)).toEqual([
      { kind: "agent", status: "completed", code: null },
      { kind: "result_check", status: "failed", code: "result_invalid" },
    ]);
    expect(await artifactsOf(invocation)).toEqual([{ name: "result.json", task_id: check.row.id }]);
  });

  it("records nothing after a task the reaper closed", async () => {
    const { invocation, task, check } = await runningAgentTask();
    await failOpenTasks(bed.pool, invocation, diagnostic("worker_lost", "gone"));
    await finishTask(bed.pool, task, { status: "completed", exitCode: 0 }, { followedBy: check });
    expect(await tasksOf(invocation)).toEqual([{ kind: "agent", status: "failed", code: "worker_lost" }]);
    expect(await artifactsOf(invocation)).toEqual([]);
  });
});
