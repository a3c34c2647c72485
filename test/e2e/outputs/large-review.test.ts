import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import {
  answer,
  call,
  lastAnswers,
  type ToolAnswer,
  toolAnswers,
  userText,
  useTools,
} from "../worker/orchestration-script.ts";
import {
  type LargeReviewBed,
  MAX_LINES,
  PLANNER_KEY,
  REPO,
  startLargeReviewBed,
} from "./large-review-bed.ts";

/** the pull request's files by directory, with their changed lines: 30,000 in all */
const CHANGES: Record<string, number> = {
  "db/migrations/001.sql": 1500,
  "db/migrations/002.sql": 1500,
  "db/migrations/003.sql": 1500,
  "docs/api.md": 800,
  "docs/guide.md": 1200,
  "src/api/a.ts": 2000,
  "src/api/b.ts": 2000,
  "src/api/c.ts": 2000,
  "src/ui/x.tsx": 3500,
  "src/ui/y.tsx": 3000,
  "vendor/huge.js": 11000,
};
/**
 * The path groups under max_changed_lines (10,000): whole directories in path order, the two small
 * ones packed together, `src/api` and `src/ui` apart (together they are above the limit), and the
 * file above the limit alone.
 */
const GROUPS = [
  ["db/migrations/001.sql", "db/migrations/002.sql", "db/migrations/003.sql", "docs/api.md", "docs/guide.md"],
  ["src/api/a.ts", "src/api/b.ts", "src/api/c.ts"],
  ["src/ui/x.tsx", "src/ui/y.tsx"],
  ["vendor/huge.js"],
];

const text = (lines: number, name: string) =>
  `${Array.from({ length: lines }, (_, i) => `${name} line ${i + 1}`).join("\n")}\n`;
const patch = (lines: number, name: string) =>
  `@@ -0,0 +1,${lines} @@\n${Array.from({ length: lines }, (_, i) => `+${name} line ${i + 1}`).join("\n")}`;

/**
 * The orchestrator as a model would script it from its prompt: the task ids the `## Path groups`
 * section lists, waited for, each result read, then one review of every group's findings.
 */
function mergingOrchestrator(body: Record<string, unknown>): Record<string, unknown> {
  const all = toolAnswers(body);
  const last = lastAnswers(body);
  if (all.length === 0) {
    const section = userText(body).split("## Path groups")[1] ?? "";
    const ids = [...section.matchAll(/^- `(tsk_[a-z2-7]+)`/gm)].map((match) => match[1]);
    if (ids.length === 0) return answer({ review: { event: "COMMENT", body: "NO-PATH-GROUPS" } });
    return useTools(call("wait_tasks", { ids, timeout_s: 120 }));
  }
  if (last[0]?.name === "wait_tasks") {
    const waited = last[0];
    if (!waited.json?.done) return useTools(call("wait_tasks", waited.args));
    const tasks = waited.json.tasks as { id: string }[];
    return useTools(...tasks.map((task) => call("read_task_result", { id: task.id })));
  }
  const comments = last.flatMap(
    (read: ToolAnswer) =>
      ((read.json?.result as { comments?: unknown[] } | null)?.comments ?? []) as unknown[],
  );
  return answer({
    review: { event: "COMMENT", body: `MERGED: ${last.length} path groups reviewed.`, comments },
  });
}

/**
 * Issue 56, part 2, against the loopback GitHub with real ingress and worker processes, a real
 * repository and a loopback model: a pull request above review.max_changed_lines on an
 * orchestrated pipeline is split by path groups, one task each, and the orchestrator merges their
 * findings into one review; without an orchestrator it is refused as too large.
 */
describe("large pull requests: split by path groups with an orchestrator", () => {
  let bed: LargeReviewBed;
  let base: string;
  let head: string;

  beforeAll(async () => {
    bed = await startLargeReviewBed(inject("adminDatabaseUrl"));
    bed.model.answer(PLANNER_KEY, { status: 200, reply: mergingOrchestrator });
    base = bed.commit({ "README.md": "# Gadgets\n" }, "base");
    bed.push(base, "refs/heads/main");
    head = bed.commit(
      Object.fromEntries(Object.entries(CHANGES).map(([path, lines]) => [path, text(lines, path)])),
      "a large change",
    );
    for (const number of [7, 8]) {
      bed.push(head, `refs/pull/${number}/head`);
      bed.github.pushFiles(
        `${REPO}#${number}`,
        Object.entries(CHANGES).map(([path, lines]) => ({
          filename: path,
          status: "added",
          patch: patch(lines, path),
        })),
      );
    }
  }, 180_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it("a 30,000-line pull request gets one task per path group and one review merging their findings", async () => {
    const trigger = await bed.deliver("opened", { number: 7, head, base, additions: 30_000, deletions: 0 });
    const row = await waitForTrigger(bed.pool, trigger);
    const { invocations, tasks } = await lineage(bed.pool, trigger);
    expect(row.status, JSON.stringify(invocations[0]?.diagnostic)).toBe("completed");

    // one task per path group, in order, each naming exactly its files
    const groupTasks = tasks.filter((task) => task.spec !== null);
    expect(groupTasks.map((task) => task.spec.inputs.path_group.files)).toEqual(GROUPS);
    expect(groupTasks.map((task) => task.status)).toEqual(GROUPS.map(() => "completed"));
    for (const [index, task] of groupTasks.entries()) {
      const group = task.spec.inputs.path_group;
      expect(group.lines).toBe(GROUPS[index]!.reduce((sum, path) => sum + CHANGES[path]!, 0));
      // at or under the limit, but for the one file above it
      if (group.files.length > 1) expect(group.lines).toBeLessThanOrEqual(MAX_LINES);
      for (const path of Object.keys(CHANGES))
        expect(task.spec.instructions.includes(`- \`${path}\` (`), `${path} in task ${index + 1}`).toBe(
          GROUPS[index]!.includes(path),
        );
      expect(task.spec.instructions).toContain(`You review group ${index + 1} of ${GROUPS.length}`);
      expect(task.spec.instructions).toContain("Review the pull request for bugs.");
    }
    // no directory is split across groups
    const groupOf = new Map(GROUPS.flatMap((files, index) => files.map((path) => [path, index])));
    const dirOf = (path: string) => path.slice(0, path.lastIndexOf("/"));
    for (const path of Object.keys(CHANGES))
      for (const other of Object.keys(CHANGES))
        if (dirOf(path) === dirOf(other)) expect(groupOf.get(path)).toBe(groupOf.get(other));
    // the path rule reaches the group of the files it matches only
    expect(groupTasks.map((task) => task.spec.instructions.includes("DB-RULE"))).toEqual([
      true,
      false,
      false,
      false,
    ]);
    // the orchestrator's agent task is their parent
    const orchestrator = tasks.find((task) => task.kind === "agent" && task.spec === null);
    expect(orchestrator?.name).toBe("agent on planner");
    expect(groupTasks.every((task) => task.parent_id === orchestrator.id)).toBe(true);

    // the orchestrator was told the groups and created no task itself
    const asked = bed.model.requests.find((request) => request.key === PLANNER_KEY && request.body)!;
    const prompt = userText(asked.body!);
    expect(prompt).toContain("## Path groups");
    expect(prompt).toContain(`changes 30000 lines, more than review.max_changed_lines (${MAX_LINES})`);
    for (const task of groupTasks) expect(prompt).toContain(`- \`${task.id}\``);

    // one review, holding the findings of every group
    const reviews = bed.github.reviews.get(`${REPO}#7`) ?? [];
    expect(reviews).toHaveLength(1);
    expect(reviews[0]!.body).toContain("MERGED: 4 path groups reviewed.");
    const inline = (reviews[0]!.comments as { path: string; body: string }[]).map((c) => c.path).sort();
    expect(inline).toEqual(GROUPS.map((files) => files[0]).sort());
    const comments = bed.github.comments.get(`${REPO}#7`) ?? [];
    expect(JSON.stringify(comments)).not.toContain("did not review");
  }, 120_000);

  it("the same pull request on a pipeline without an orchestrator gets the 'too large' line and no agent run", async () => {
    const trigger = await bed.deliver("reopened", { number: 8, head, base, additions: 30_000, deletions: 0 });
    const row = await waitForTrigger(bed.pool, trigger);
    const { invocations, tasks } = await lineage(bed.pool, trigger);
    expect(row.status, JSON.stringify(invocations[0]?.diagnostic)).toBe("completed");
    expect(tasks.map((task) => task.kind)).not.toContain("agent");
    const comments = bed.github.comments.get(`${REPO}#8`) ?? [];
    expect(comments).toHaveLength(1);
    expect(comments[0]!.body).toContain(
      `⏸ **refused** did not review on commit ${head}: the pull request changes 30000 lines, more than review.max_changed_lines (${MAX_LINES}).`,
    );
    expect(bed.github.reviews.get(`${REPO}#8`) ?? []).toHaveLength(0);
  }, 60_000);
});
