import { z } from "zod";
import { wakeWorkers } from "../../../db/boss.ts";
import {
  cancelOrchestratedTasks,
  createOrchestratedTask,
  getOrchestratedTask,
  listOrchestratedTasks,
  type OrchestratedTask,
  promoteTasks,
  type TaskSpec,
} from "../../../db/orchestrated-tasks.ts";
import { withTransaction } from "../../../db/transaction.ts";
import type { Pipeline } from "../../../shared/config/types.ts";
import { diagnostic } from "../../../shared/diagnostics.ts";
import { pipelineLane } from "../../../shared/queues.ts";
import type { Principal } from "../../auth/principal.ts";
import { type ToolCall, type ToolDefinition, textResult } from "../tool.ts";

/**
 * The task tools of an orchestrated run (docs/worker.md, "Orchestrated execution"). Only the
 * orchestrator's own run token may call them: a task's token (depth 1), a direct run's token and
 * every other caller get `Forbidden`, and do not see them in `tools/list`.
 */
const orchestratorOnly = (principal: Principal) => principal.run?.role === "orchestrator";

const FINISHED = new Set(["completed", "failed", "cancelled"]);
const SUMMARY_CHARS = 300;
// how often wait_tasks looks: a finished task is seen within this, for one indexed query per look
const POLL_MS = 100;

interface Orchestration {
  invocation: string;
  parent: string | null;
  pipeline: Pipeline;
  orchestrator: NonNullable<Pipeline["orchestrator"]>;
}

/** The caller's orchestrated run, or why there is none (an orchestrator token of a removed pipeline). */
function orchestration({ principal, deps }: ToolCall): Orchestration | string {
  const run = principal.run!;
  const pipeline = run.pipeline ? deps.config.pipelines[run.pipeline] : undefined;
  if (!pipeline?.orchestrator)
    return `pipeline ${run.pipeline ?? "(none)"} is not orchestrated on this daemon`;
  return {
    invocation: run.invocation,
    parent: run.task ?? null,
    pipeline,
    orchestrator: pipeline.orchestrator,
  };
}

/** What list_tasks and wait_tasks show of a task: its state, diagnostic and a short summary of its result. */
function taskView(task: OrchestratedTask) {
  const text = task.result === null || task.result === undefined ? null : JSON.stringify(task.result);
  return {
    id: task.id,
    status: task.status,
    target: task.target,
    ...(task.spec.skill ? { skill: task.spec.skill } : {}),
    ...(task.spec.principal ? { principal: task.spec.principal } : {}),
    diagnostic: task.diagnostic,
    summary: text && text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 3)}...` : text,
  };
}

/** null when the task may run as asked; otherwise the refusal, naming the binding a skill needs. */
function principalRefusal(call: ToolCall, pipeline: Pipeline, spec: TaskSpec): string | null {
  // an outsider's prompt steers the orchestrator: it may not lend a task the team's identity
  // (a token without the worker's record of its event counts as an outsider's)
  if (spec.principal && call.principal.run?.outsider !== false)
    return `principal "${spec.principal}" is refused: this run's event came from outside the repository's team, and an outsider's run cannot give a task a principal`;
  const bindings = Object.keys(pipeline.principals);
  const known = bindings.length ? bindings.map((name) => `"${name}"`).join(", ") : "none";
  if (spec.skill) {
    const skill = call.deps.config.skills[spec.skill];
    if (!skill) return `skill "${spec.skill}" is not configured`;
    const required = skill.principal;
    if (required && (spec.principal !== required || !pipeline.principals[required])) {
      return pipeline.principals[required]
        ? `skill "${spec.skill}" requires the principal binding "${required}" - call create_task again with principal: "${required}"`
        : `skill "${spec.skill}" requires the principal binding "${required}", which pipeline ${pipeline.name} does not bind (its principals: ${known}) - add "principals: { ${required}: <provider>.principal.<id> }" to the pipeline`;
    }
  }
  if (spec.principal && !pipeline.principals[spec.principal])
    return `principal "${spec.principal}" is not a binding of pipeline ${pipeline.name} (its principals: ${known})`;
  return null;
}

export const createTask: ToolDefinition = {
  name: "create_task",
  description:
    "Create a task: an agent that works on part of this run in parallel with others and returns a JSON result. Returns the task id; use wait_tasks and read_task_result to collect it. Tasks publish nothing themselves.",
  access: "write",
  permits: orchestratorOnly,
  input: z
    .object({
      instructions: z.string().min(1).max(100_000).describe("what the task agent should do"),
      skill: z.string().min(1).max(200).optional().describe("a configured skill the task runs with"),
      principal: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe("a binding of the pipeline's principals the task acts as (a skill may require one)"),
      inputs: z
        .record(z.string(), z.unknown())
        .optional()
        .describe("data the task needs, given to it as JSON"),
    })
    .strict(),
  async run(input, call) {
    const found = orchestration(call);
    if (typeof found === "string") return textResult(found, true);
    const spec = input as unknown as TaskSpec;
    const refused = principalRefusal(call, found.pipeline, spec);
    if (refused) return textResult(refused, true);
    const { deps } = call;
    // tasks run on the pipeline's own targets, whatever the orchestrator runs on
    const lane = pipelineLane({ targets: found.pipeline.targets }, deps.config.targets);
    const { outcome, lanes } = await withTransaction(deps.pool, async (client) => {
      const created = await createOrchestratedTask(client, {
        invocationId: found.invocation,
        parentId: found.parent,
        target: lane.target,
        spec,
        maxTasks: found.orchestrator.maxTasks,
      });
      if (created.kind !== "created") return { outcome: created, lanes: [] };
      return {
        outcome: created,
        lanes: await promoteTasks(client, deps.boss, found.invocation, found.orchestrator.maxParallel),
      };
    });
    for (const queue of lanes) wakeWorkers(deps.boss, queue);
    if (outcome.kind === "ended")
      return textResult(`this run is ${outcome.status}: it creates no more tasks`, true);
    if (outcome.kind === "budget")
      return textResult(
        `max_tasks reached: this run already created ${outcome.created} tasks, the most orchestrator.max_tasks allows (${found.orchestrator.maxTasks}) - wait for them, read their results, or finish with what you have`,
        true,
      );
    deps.logger.info("task created", {
      event: "task.created",
      invocation: found.invocation,
      task: outcome.task.id,
      skill: spec.skill,
    });
    return textResult({ id: outcome.task.id, status: outcome.task.status });
  },
};

export const listTasks: ToolDefinition = {
  name: "list_tasks",
  description:
    "List every task this run created (also those created before a retry of this run): status, target, diagnostic and a summary of the result.",
  access: "read",
  permits: orchestratorOnly,
  input: z.object({}).strict(),
  async run(_input, { principal, deps }) {
    const tasks = await listOrchestratedTasks(deps.pool, principal.run!.invocation);
    return textResult({ tasks: tasks.map(taskView) });
  },
};

export const waitTasks: ToolDefinition = {
  name: "wait_tasks",
  description:
    "Wait until every named task has finished (completed, failed or cancelled) or timeout_s passes; returns their states. A failed task carries its diagnostic.",
  access: "read",
  permits: orchestratorOnly,
  input: z
    .object({
      ids: z.array(z.string().min(1).max(100)).min(1).max(100).describe("task ids from create_task"),
      timeout_s: z.number().min(0).max(600).describe("the longest to wait, in seconds"),
    })
    .strict(),
  async run(input, { principal, deps }) {
    const { ids, timeout_s } = input as { ids: string[]; timeout_s: number };
    const invocation = principal.run!.invocation;
    const deadline = Date.now() + timeout_s * 1000;
    for (;;) {
      const tasks = (await listOrchestratedTasks(deps.pool, invocation)).filter((task) =>
        ids.includes(task.id),
      );
      const unknown = ids.filter((id) => !tasks.some((task) => task.id === id));
      if (unknown.length) return textResult(`no task of this run has the id ${unknown.join(", ")}`, true);
      const done = tasks.every((task) => FINISHED.has(task.status));
      if (done || Date.now() >= deadline) return textResult({ done, tasks: tasks.map(taskView) });
      await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, deadline - Date.now())));
    }
  },
};

export const readTaskResult: ToolDefinition = {
  name: "read_task_result",
  description: "Read a task's full result (its JSON object), or the diagnostic of a task that failed.",
  access: "read",
  permits: orchestratorOnly,
  input: z.object({ id: z.string().min(1).max(100) }).strict(),
  async run(input, { principal, deps }) {
    const id = (input as { id: string }).id;
    const task = await getOrchestratedTask(deps.pool, principal.run!.invocation, id);
    if (!task) return textResult(`no task of this run has the id ${id}`, true);
    return textResult({ id, status: task.status, result: task.result, diagnostic: task.diagnostic });
  },
};

export const cancelTask: ToolDefinition = {
  name: "cancel_task",
  description: "Cancel a task that has not finished: its agent is stopped and its result is never read.",
  access: "write",
  permits: orchestratorOnly,
  input: z.object({ id: z.string().min(1).max(100) }).strict(),
  async run(input, call) {
    const id = (input as { id: string }).id;
    const found = orchestration(call);
    if (typeof found === "string") return textResult(found, true);
    const { deps } = call;
    const task = await getOrchestratedTask(deps.pool, found.invocation, id);
    if (!task) return textResult(`no task of this run has the id ${id}`, true);
    const cancelled = diagnostic("cancelled", "the orchestrator cancelled the task");
    const lanes = await withTransaction(deps.pool, async (client) => {
      if ((await cancelOrchestratedTasks(client, found.invocation, cancelled, id)).length === 0) return [];
      // a slot is free: the next pending task may start
      return promoteTasks(client, deps.boss, found.invocation, found.orchestrator.maxParallel);
    });
    for (const queue of lanes) wakeWorkers(deps.boss, queue);
    const after = await getOrchestratedTask(deps.pool, found.invocation, id);
    return textResult({ id, status: after?.status ?? task.status });
  },
};

export const TASK_TOOLS: readonly ToolDefinition[] = [
  createTask,
  listTasks,
  waitTasks,
  readTaskResult,
  cancelTask,
];
