import { describe, expect, it } from "vitest";
import { insertQueuedRuns } from "../../../db/invocations.ts";
import {
  claimOrchestratedTasks,
  createOrchestratedTask,
  finishOrchestratedTask,
} from "../../../db/orchestrated-tasks.ts";
import { insertTrigger } from "../../../db/triggers.ts";
import { newId } from "../../../shared/ids.ts";
import { unowned } from "../../../worker/exec/sandbox/sweep.ts";
import { describeTestBed } from "./helpers.ts";

/**
 * The sweeper's decision (worker/exec/sandbox/sweep.ts): a run's container is owned while its
 * invocation runs under the container's worker; an orchestrated task's container (`svc.task`)
 * while its task runs under the container's worker, whichever worker holds the invocation.
 */
describe("which sandbox containers the sweeper removes", () => {
  const bed = describeTestBed();

  /** An invocation running under `orchestrator`, with one task running under `taskWorker`. */
  async function runningTask(orchestrator: string, taskWorker: string) {
    const invocation = newId("invocation");
    const { id: triggerId } = await insertTrigger(bed.pool, {
      ...{ kind: "manual", source: "p", eventName: "p", deliveryId: null, payloadJson: "{}" },
    });
    await insertQueuedRuns(bed.pool, [
      {
        ...{ workloadId: newId("workload"), triggerId, pipeline: "p", pipelineVersion: "1.0.0" },
        ...{ owner: null, workspace: bed.dir, invocationId: invocation, target: null },
      },
    ]);
    await bed.pool.query("UPDATE svc.invocations SET status = 'running', worker_id = $2 WHERE id = $1", [
      invocation,
      orchestrator,
    ]);
    const created = await createOrchestratedTask(bed.pool, {
      ...{ invocationId: invocation, parentId: null, target: null },
      ...{ spec: { instructions: "look" }, maxTasks: 8 },
    });
    if (created.kind !== "created") throw new Error(`no task: ${created.kind}`);
    const task = created.task.id;
    await bed.pool.query("UPDATE svc.tasks SET status = 'queued' WHERE id = $1", [task]);
    expect(await claimOrchestratedTasks(bed.pool, [task], taskWorker, 60_000)).toHaveLength(1);
    return { invocation, task };
  }

  const container = (id: string, labels: Record<string, string>) => ({ Id: id, Labels: labels });

  it("keeps a running task's container on another worker than its invocation's, and removes it once the task ended", async () => {
    const { invocation, task } = await runningTask("w-orchestrator", "w-task");
    const runs = container("run", { "svc.invocation": invocation, "svc.worker": "w-orchestrator" });
    const tasks = container("task", {
      "svc.invocation": invocation,
      "svc.task": task,
      "svc.worker": "w-task",
    });
    // the same task's label under another worker: a container left by a worker that lost the task
    const lost = container("lost", {
      "svc.invocation": invocation,
      "svc.task": task,
      "svc.worker": "w-dead",
    });
    expect((await unowned(bed.pool, [runs, tasks, lost])).map((c) => c.Id)).toEqual(["lost"]);

    expect(await finishOrchestratedTask(bed.pool, task, "w-task", { status: "completed", result: {} })).toBe(
      true,
    );
    // the invocation still runs: only the task's container goes
    expect((await unowned(bed.pool, [runs, tasks])).map((c) => c.Id)).toEqual(["task"]);
  });

  it("removes a task's container whose task is unknown", async () => {
    const { invocation } = await runningTask("w-orchestrator", "w-task");
    const stray = container("stray", {
      ...{ "svc.invocation": invocation, "svc.task": newId("task"), "svc.worker": "w-orchestrator" },
    });
    expect((await unowned(bed.pool, [stray])).map((c) => c.Id)).toEqual(["stray"]);
  });
});
