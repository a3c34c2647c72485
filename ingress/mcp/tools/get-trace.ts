import { z } from "zod";
import { readLineage } from "../../../db/lineage.ts";
import { type ToolDefinition, textResult } from "../tool.ts";

/**
 * `get_trace`: the lineage of the caller's own run (trigger → workloads → invocations → tasks and
 * artifact names). Only a run token has a run; other callers read lineage through `GET /trace/:id`.
 */
export const getTrace: ToolDefinition = {
  name: "get_trace",
  description:
    "Show the lineage of this run: the trigger that started it, its workloads, invocations, tasks and artifact names.",
  access: "read",
  input: z.object({}).strict(),
  async run(_input, { principal, deps }) {
    const invocation = principal.run?.invocation;
    if (!invocation)
      return textResult("get_trace shows the caller's own run, and this token is not a run token", true);
    const lineage = await readLineage(deps.pool, invocation);
    if (!lineage) return textResult(`the run ${invocation} is no longer recorded`, true);
    return textResult({
      invocation,
      trigger: lineage.trigger,
      workloads: lineage.workloads,
      invocations: lineage.invocations,
      tasks: lineage.tasks,
      artifacts: lineage.artifacts.map(({ rendered: _rendered, ...entry }) => entry),
    });
  },
};
