import { wakeWorkers } from "../../db/boss.ts";
import {
  createOrchestratedTask,
  listOrchestratedTasks,
  promoteTasks,
  type TaskSpec,
} from "../../db/orchestrated-tasks.ts";
import { withTransaction } from "../../db/transaction.ts";
import type { Pipeline } from "../../shared/config/types.ts";
import { pipelineLane } from "../../shared/queues.ts";
import { type ResolvedEvent, runIdentity } from "../event/resolve.ts";
import { type ChangedFile, pathGroups, type ReviewSplit } from "./path-groups.ts";
import { reviewSection } from "./prompt.ts";
import { type RunReview, reviewPrompt } from "./review-rules.ts";
import type { RunDeps, RunInput } from "./types.ts";

/**
 * A pull request above `review.max_changed_lines` on an orchestrated pipeline: instead of the "did
 * not review" line, svc splits the review by path groups (path-groups.ts) and creates one task per
 * group itself, before the setup steps, so the tasks run beside them. The orchestrator is told the
 * groups (pathGroupsSection) and merges the tasks' findings into the run's one result
 * (docs/worker.md, "Large pull requests").
 */

/** How a path-group task's `inputs` name its group: what a retried run recognises its tasks by. */
interface GroupInputs {
  path_group: { index: number; of: number; files: string[]; lines: number };
}

/**
 * The split of this run's review, its tasks created (once: a retried run whose tasks exist reuses
 * them); undefined when the pipeline has no orchestrator or the changed files are not known, and
 * the run is then refused as too large.
 */
export async function splitReview(
  deps: RunDeps,
  input: Pick<RunInput, "invocationId" | "pipeline">,
  event: ResolvedEvent,
  review: RunReview,
  large: { lines: number; max: number },
): Promise<ReviewSplit | undefined> {
  const { pipeline, invocationId } = input;
  const orchestrator = pipeline.orchestrator;
  const files = review.facts.changed?.files;
  // a worker without its queue (phases run alone) could create tasks that no lane job starts
  if (!orchestrator || !files?.length || !deps.boss) return undefined;
  const boss = deps.boss;
  const groups = pathGroups(files, large.max, orchestrator.maxTasks);
  const lane = pipelineLane({ targets: pipeline.targets }, deps.config.targets);
  const { parts, lanes } = await withTransaction(deps.pool, async (client) => {
    const existing = (await listOrchestratedTasks(client, invocationId)).filter(
      (task) => (task.spec.inputs as GroupInputs | undefined)?.path_group,
    );
    if (existing.length > 0) return { parts: existing.map(partOf), lanes: [] };
    const parts: ReviewSplit["parts"] = [];
    for (const [index, group] of groups.entries()) {
      const spec = groupSpec(deps, pipeline, event, review, large, {
        index: index + 1,
        of: groups.length,
        files: group.files,
        lines: group.lines,
      });
      const created = await createOrchestratedTask(client, {
        invocationId,
        parentId: null,
        target: lane.target,
        spec,
        maxTasks: orchestrator.maxTasks,
      });
      // the run ended meanwhile (cancelled), or tasks of an earlier attempt took the budget
      if (created.kind !== "created")
        throw new Error(
          `the path group tasks of ${invocationId} could not be created: ${created.kind === "ended" ? `the run is ${created.status}` : `orchestrator.max_tasks (${orchestrator.maxTasks}) is reached`}`,
        );
      parts.push(partOf(created.task));
    }
    return { parts, lanes: await promoteTasks(client, boss, invocationId, orchestrator.maxParallel) };
  });
  for (const queue of lanes) wakeWorkers(boss, queue);
  deps.logger.info("large review split by path groups", {
    event: "review.split",
    invocation: invocationId,
    lines: large.lines,
    tasks: parts.map((part) => part.taskId),
  });
  return { ...large, parts };
}

function partOf(task: { id: string; spec: TaskSpec }): ReviewSplit["parts"][number] {
  const group = (task.spec.inputs as GroupInputs).path_group;
  return { taskId: task.id, files: group.files, lines: group.lines };
}

/**
 * A group's task: the pipeline's skill (with the principal it requires, where the pipeline binds
 * it and the event is the team's, as `create_task` allows) and instructions naming exactly its
 * files, the pipeline's instructions, the rules of those files and the shape of the result.
 */
function groupSpec(
  deps: RunDeps,
  pipeline: Pipeline,
  event: ResolvedEvent,
  review: RunReview,
  large: { lines: number; max: number },
  group: { index: number; of: number; files: ChangedFile[]; lines: number },
): TaskSpec {
  const paths = group.files.map((file) => file.path);
  const listed = group.files.map((file) => `- \`${file.path}\` (${file.lines} lines)`).join("\n");
  const rules = reviewPrompt({
    ...review,
    facts: { ...review.facts, changed: { paths, lines: group.lines } },
  });
  const rulesText = rules ? reviewSection(rules) : undefined;
  const schema = pipeline.result
    ? `\n\n\`\`\`json\n${JSON.stringify(pipeline.result.schema, null, 2)}\n\`\`\``
    : "";
  const instructions = [
    `This pull request changes ${large.lines} lines, more than review.max_changed_lines (${large.max}), so svc split its review by path groups. You review group ${group.index} of ${group.of}: the changes to ${paths.length === 1 ? "this file" : `these ${paths.length} files`} (${group.lines} lines) and nothing else; other tasks review the other groups.`,
    listed,
    'See them with `git diff "$BASE_SHA...HEAD" -- <path>`.',
    `# How this pipeline reviews\n\n${pipeline.instructions.trim()}`,
    ...(rulesText ? [rulesText] : []),
    `# Findings\n\nEnd with one JSON object: your findings on these files only, in the shape of the run's result${schema ? " below" : ""} (inline comments name their path and line), so the orchestrator can merge every group's findings into one review.${schema}`,
  ].join("\n\n");
  const inputs: GroupInputs = {
    path_group: { index: group.index, of: group.of, files: paths, lines: group.lines },
  };
  return { instructions, ...taskSkill(deps, pipeline, event), inputs };
}

function taskSkill(
  deps: RunDeps,
  pipeline: Pipeline,
  event: ResolvedEvent,
): Pick<TaskSpec, "skill" | "principal"> {
  const { skill } = runIdentity(pipeline, event.context);
  const required = skill ? deps.config.skills[skill]?.principal : undefined;
  if (!skill || !deps.config.skills[skill]) return {};
  if (!required) return { skill };
  // an outsider's run lends no task the team's identity; a skill that needs one is left out
  if (event.context.outsider || !pipeline.principals[required]) return {};
  return { skill, principal: required };
}

/**
 * The `## Path groups` part of the orchestrator's `# Orchestration` section: the tasks svc created
 * and how their findings become the one result.
 */
export function pathGroupsSection(split: ReviewSplit): string {
  const shown = 20;
  const parts = split.parts.map((part, index) => {
    const files = part.files.slice(0, shown).map((path) => `\`${path}\``);
    const more = part.files.length > shown ? `, and ${part.files.length - shown} more` : "";
    return `- \`${part.taskId}\`: group ${index + 1} of ${split.parts.length}, ${part.lines} lines: ${files.join(", ")}${more}`;
  });
  return [
    "## Path groups",
    "",
    `This pull request changes ${split.lines} lines, more than review.max_changed_lines (${split.max}), so svc split its review by path groups and created one task per group already; do not create them again. Wait for them with \`wait_tasks\`, read each result with \`read_task_result\`, and merge their findings into one result: one review holding every group's findings. Name a group whose task failed in the review's body rather than leaving it out silently; the tasks count toward max_tasks, so you may retry one with \`create_task\` while the budget lasts.`,
    "",
    ...parts,
  ].join("\n");
}
