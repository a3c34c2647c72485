import { execFile } from "node:child_process";
import { readdir, readFile, rm } from "node:fs/promises";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { FakeModelApi, USAGE_PER_CALL } from "./fake-model-api.ts";
import {
  answer,
  call,
  lastAnswers,
  offeredTools,
  orchestrator,
  type ToolAnswer,
  toolAnswers,
  userText,
  useTools,
} from "./orchestration-script.ts";
import {
  postPullRequest,
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "./processes.ts";

const execFileAsync = promisify(execFile);
const ROOT = join(import.meta.dirname, "../../..");
const HOOK_TOKEN = "e2e-orchestration-hook-token";
const GITHUB_SECRET = "e2e-orchestration-github-secret";
const REVIEWER_TOKEN = "ghs_orchestratedReviewer42";
const PR_PAYLOAD = JSON.parse(
  await readFile(join(ROOT, "ingress/webhooks/codehost/fixtures/pull_request/opened.payload.json"), "utf8"),
) as { number: number; repository: { full_name: string } };
const THREAD = `${PR_PAYLOAD.repository.full_name}#${PR_PAYLOAD.number}`;
const AREAS = ["src", "docs", "tests"];
/** runs of the overhead measurement (odd: the median is one of them) */
const ROUNDS = 3;

/** Runs svc as its users do, against the daemon at `url`. */
async function svc(url: string, ...args: string[]): Promise<string> {
  const { stdout } = await execFileAsync(process.execPath, [join(ROOT, "bin/svc.js"), ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", SVC_DAEMON_URL: url },
  });
  return stdout;
}

function openaiTarget(name: string, url: string, key: string, extra = ""): string {
  return `  ${name}:
    runtime: openai
    base_url: ${url}
    model: test-model
    max_turns: 12
    timeout: 60s
    credentials: [{ name: a, secret: ${key} }]
${extra}`;
}

function orchestrated(
  name: string,
  body: { hook?: string; targets: string; orchestrator: string; extra?: string },
): Record<string, string> {
  return {
    [`pipelines/${name}.yaml`]: `version: 1.0.0
agent: reviewer
trigger:
  ${body.hook ? `webhook: [${body.hook}]` : "codehost: [pull_request.opened]"}
targets: [${body.targets}]
instructions: Split the work into tasks and combine what they find.
orchestrator:
  strategy: { type: auto }
  targets: [${body.orchestrator}]
${body.extra ?? ""}`,
  };
}

describe("orchestrated execution (real ingress + worker processes, loopback model)", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let github: FakeGitHub;
  let ingress: RoleProcess;
  let worker: RoleProcess | undefined;
  let url: string;
  const model = new FakeModelApi();
  const env: Record<string, string> = {
    HOOK_TOKEN,
    GITHUB_SECRET,
    REVIEWER_TOKEN,
    SVC_WORKER_HEARTBEAT_MS: "300",
    SVC_WORKER_STALE_MS: "2500",
  };
  const workers: RoleProcess[] = [];
  const spawnWorker = async () => {
    const started = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
    workers.push(started);
    return started;
  };

  beforeAll(async () => {
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    await model.start();
    github = await startFakeGitHub({ users: { [REVIEWER_TOKEN]: "svc-reviewer" } });
    github.files.set(THREAD, [
      { filename: "src/app.js", status: "modified", patch: "@@ -1,1 +1,1 @@\n-a\n+b" },
    ]);
    scriptModel();
    const hooks = [
      "greedy",
      "unbound",
      "nested",
      "stuck",
      "fragile",
      "triple",
      "single",
      "slowpoke",
      "overdue",
      "bound",
      "thrifty",
    ]
      .map((hook) => `    ${hook}: { verify: bearer, secret: "\${HOOK_TOKEN}" }`)
      .join("\n");
    const targets = [
      openaiTarget("planner", model.url, "orch-key"),
      openaiTarget("reviewers", model.url, "task-key"),
      openaiTarget("greedy-planner", model.url, "greedy-key"),
      openaiTarget("quick", model.url, "quick-key"),
      openaiTarget("unbound-planner", model.url, "unbound-key"),
      openaiTarget("nested-planner", model.url, "nested-key"),
      openaiTarget("nested-tasks", model.url, "nested-task-key"),
      openaiTarget("stuck-planner", model.url, "stuck-key"),
      openaiTarget("fragile-planner", model.url, "fragile-key"),
      openaiTarget("triple-planner", model.url, "triple-key"),
      openaiTarget("triple-tasks", model.url, "triple-task-key"),
      openaiTarget("slowpoke-planner", model.url, "slowpoke-key"),
      openaiTarget("overdue-planner", model.url, "overdue-key"),
      openaiTarget("bound-planner", model.url, "bound-key"),
      openaiTarget("thrifty-planner", model.url, "thrifty-key"),
      '  identity: { runtime: command, command: ["./bin/identity-task"], timeout: 30s }',
      '  hang: { runtime: command, command: ["./bin/hang-task"], timeout: 120s }',
      '  hang-once: { runtime: command, command: ["./bin/hang-once"], timeout: 120s }',
    ].join("\n");
    dir = await writeConfigDir(
      {
        "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
${hooks}
targets:
${targets}
ask:
  targets: [quick]
codehost:
  api_url: ${github.url}
  principals:
    "42":
      token: \${REVIEWER_TOKEN}
worker:
  concurrency: 4
  grace_period: 2s
`,
        "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review.\n",
        "skills/review/SKILL.md":
          "---\nname: review\ndescription: Review one area.\nmetadata:\n  version: 1.0.0\nprincipal: pull-request-reviewer\n---\nReview the area you are given.\n",
        "bin/hang-task": '#!/bin/sh\ncat > /dev/null\necho $$ > "$RUN_DIR/pid"\nsleep 300\n',
        // says which principal it acts as, and whether its code-host token is the principal's (never the value)
        "bin/identity-task": `#!/bin/sh\ncat > /dev/null\nif [ "$GH_TOKEN" = "${REVIEWER_TOKEN}" ] && [ "$GITHUB_TOKEN" = "$GH_TOKEN" ]; then same=true; else same=false; fi\necho "{\\"principal\\": \\"$SVC_PRINCIPAL\\", \\"reviewer_token\\": $same}"\n`,
        "bin/hang-once":
          '#!/bin/sh\ncat > /dev/null\nif [ ! -e "$RUN_DIR/first" ]; then touch "$RUN_DIR/first"; echo $$ > "$RUN_DIR/pid"; sleep 60; fi\necho \'{"area": "fragile", "finding": "done on retry"}\'\n',
        ...orchestrated("review", {
          targets: "reviewers",
          orchestrator: "planner",
          extra: `principals:
  pull-request-reviewer: codehost.principal.42
principal: pull-request-reviewer
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review }
`,
        }),
        ...orchestrated("greedy", { hook: "greedy", targets: "quick", orchestrator: "greedy-planner" }),
        ...orchestrated("unbound", { hook: "unbound", targets: "quick", orchestrator: "unbound-planner" }),
        ...orchestrated("nested", {
          hook: "nested",
          targets: "nested-tasks",
          orchestrator: "nested-planner",
        }),
        ...orchestrated("stuck", { hook: "stuck", targets: "hang", orchestrator: "stuck-planner" }),
        ...orchestrated("fragile", {
          hook: "fragile",
          targets: "hang-once",
          orchestrator: "fragile-planner",
        }),
        ...orchestrated("slowpoke", {
          hook: "slowpoke",
          targets: "hang",
          orchestrator: "slowpoke-planner",
          extra: "  task_timeout: 1s\n",
        }),
        ...orchestrated("overdue", {
          hook: "overdue",
          targets: "hang",
          orchestrator: "overdue-planner",
          extra: "  timeout: 4s\n",
        }),
        ...orchestrated("bound", {
          hook: "bound",
          targets: "identity",
          orchestrator: "bound-planner",
          extra: "principals:\n  pull-request-reviewer: codehost.principal.42\n",
        }),
        // a budget over the whole invocation: the orchestrator's model calls and its tasks'
        ...orchestrated("thrifty", {
          hook: "thrifty",
          targets: "quick",
          orchestrator: "thrifty-planner",
          extra: "budget: { requests: 5 }\n",
        }),
        // the baseline: one agent of the same model time, run directly
        "pipelines/single.yaml":
          "version: 1.0.0\nagent: reviewer\ntrigger:\n  webhook: [single]\ntargets: [triple-tasks]\ninstructions: PART d\n",
        ...orchestrated("triple", {
          hook: "triple",
          targets: "triple-tasks",
          orchestrator: "triple-planner",
          extra: "  max_parallel: 3\n",
        }),
      },
      ["bin/hang-task", "bin/hang-once", "bin/identity-task"],
    );
    env.SVC_CONFIG_DIR = dir;
    env.SVC_DATABASE_URL = database.url;
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    worker = await spawnWorker();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  });

  afterAll(async () => {
    for (const started of workers) await started.stop("SIGKILL");
    await ingress?.stop();
    await model.stop();
    await github?.close();
    await pool?.end();
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  function scriptModel() {
    // the review: three areas, each task bound to the reviewer principal its skill requires
    model.answer("orch-key", {
      status: 200,
      reply: orchestrator(
        AREAS.map((area) => ({
          instructions: `Review AREA: ${area} of the pull request.`,
          skill: "review",
          principal: "pull-request-reviewer",
          inputs: { area },
        })),
        (waited, read) => {
          const tasks = waited.json!.tasks as { status: string; diagnostic: { code: string } | null }[];
          const failed = tasks.filter((task) => task.status === "failed");
          const findings = read.map((entry) => (entry.json!.result as { finding: string }).finding);
          return {
            review: {
              event: "COMMENT",
              body: `${findings.join("; ")}. ${failed.length} area failed (${failed.map((t) => t.diagnostic?.code).join(", ")}).`,
            },
          };
        },
      ),
    });
    // a task: the tests area cannot finish (no JSON), the others report a finding
    model.answer("task-key", {
      status: 200,
      delayMs: 100,
      reply: (body) => {
        const area = /AREA: (\w+)/.exec(userText(body))?.[1] ?? "?";
        if (area === "tests") return { role: "assistant", content: "I could not run the tests." };
        return answer({ area, finding: `${area} looks fine` });
      },
    });
    model.answer("greedy-key", {
      status: 200,
      reply: (body) =>
        toolAnswers(body).length === 0
          ? useTools(
              ...Array.from({ length: 9 }, (_, i) => call("create_task", { instructions: `part ${i + 1}` })),
            )
          : answer({ answers: lastAnswers(body).map((entry) => entry.text) }),
    });
    model.answer("quick-key", { status: 200, reply: () => answer({ ok: true }) });
    // list, create two tasks, wait for them (their two calls), read them, answer: past 5 requests
    model.answer("thrifty-key", {
      status: 200,
      reply: orchestrator([{ instructions: "part one" }, { instructions: "part two" }], () => ({
        done: true,
      })),
    });
    model.answer("unbound-key", {
      status: 200,
      reply: (body) =>
        toolAnswers(body).length === 0
          ? useTools(call("create_task", { instructions: "review it", skill: "review" }))
          : answer({ refused: lastAnswers(body)[0]!.text }),
    });
    model.answer("nested-key", {
      status: 200,
      reply: orchestrator([{ instructions: "try to create a task of your own" }], (waited, read) => ({
        waited: waited.json,
        read: read.map((entry) => entry.json),
      })),
    });
    model.answer("nested-task-key", {
      status: 200,
      reply: (body) =>
        toolAnswers(body).length === 0
          ? useTools(call("create_task", { instructions: "deeper" }))
          : answer({ nested: lastAnswers(body)[0]!.text }),
    });
    model.answer("stuck-key", {
      status: 200,
      reply: orchestrator([{ instructions: "hang one" }, { instructions: "hang two" }], () => ({
        never: true,
      })),
    });
    model.answer("fragile-key", {
      status: 200,
      reply: orchestrator([{ instructions: "survive a crash" }], (waited) => ({ waited: waited.json })),
    });
    model.answer("bound-key", {
      status: 200,
      reply: orchestrator(
        [{ instructions: "act as the reviewer", skill: "review", principal: "pull-request-reviewer" }],
        (_waited, read) => ({ read: read.map((entry) => entry.json) }),
      ),
    });
    model.answer("slowpoke-key", {
      status: 200,
      reply: orchestrator([{ instructions: "hang past task_timeout" }], (waited) => ({
        waited: waited.json,
      })),
    });
    model.answer("overdue-key", {
      status: 200,
      reply: orchestrator([{ instructions: "hang past the orchestrator" }], () => ({ never: true })),
    });
    model.answer("triple-key", {
      status: 200,
      reply: orchestrator(
        ["a", "b", "c"].map((part) => ({ instructions: `PART ${part}` })),
        (_waited, read: ToolAnswer[]) => ({ parts: read.length }),
      ),
    });
    model.answer("triple-task-key", {
      status: 200,
      delayMs: 2_000,
      reply: (body) => answer({ part: /PART (\w)/.exec(userText(body))?.[1] }),
    });
  }

  async function orchestratedTasks(invocationId: string) {
    const { rows } = await pool.query(
      "SELECT * FROM svc.tasks WHERE invocation_id = $1 AND spec IS NOT NULL ORDER BY seq",
      [invocationId],
    );
    return rows;
  }

  it("a pull_request.opened creates three tasks; two succeed, one fails; one combined review is published; the trace shows them", async () => {
    const id = await postPullRequest(url, GITHUB_SECRET, PR_PAYLOAD);
    const trigger = await waitForTrigger(pool, id);
    const { invocations } = await lineage(pool, id);
    expect(trigger.status, JSON.stringify(invocations[0]?.diagnostic)).toBe("completed");
    // the invocation waits on, and runs on, the orchestrator's target; its tasks on the pipeline's
    expect(invocations[0].target).toBe("planner");
    const tasks = await orchestratedTasks(invocations[0].id);
    // the three create_task calls of one answer run at once: their order among the rows is not fixed
    const byArea = (a: string[], b: string[]) => a[0]!.localeCompare(b[0]!);
    expect(
      tasks.map((task) => [task.spec.inputs.area, task.status, task.diagnostic?.code ?? null]).sort(byArea),
    ).toEqual([
      ["docs", "completed", null],
      ["src", "completed", null],
      ["tests", "failed", "result_invalid"],
    ]);
    expect(
      tasks.every((task) => task.target === "reviewers" && task.spec.principal === "pull-request-reviewer"),
    ).toBe(true);
    // every task's model calls passed its worker's gateway, which read their usage: the task's row has it
    for (const task of tasks) {
      expect(task.usage?.requests, task.id).toBeGreaterThanOrEqual(1);
      expect(task.usage).toMatchObject({
        input_tokens: task.usage.requests * USAGE_PER_CALL.prompt_tokens,
        output_tokens: task.usage.requests * USAGE_PER_CALL.completion_tokens,
      });
    }
    // the orchestrator's agent task is the parent of all three
    const parent = await pool.query("SELECT kind, name FROM svc.tasks WHERE id = $1", [tasks[0].parent_id]);
    expect(parent.rows[0]).toEqual({ kind: "agent", name: "agent on planner" });
    // exactly one review, combining both findings and naming the failure, as the reviewer principal
    const reviews = github.reviews.get(THREAD) ?? [];
    expect(reviews).toHaveLength(1);
    expect(reviews[0]!.body).toContain("src looks fine; docs looks fine. 1 area failed (result_invalid)");
    expect(reviews[0]!.user.login).toBe("svc-reviewer");
    // tasks publish nothing: the only review POST is the orchestrator's
    expect(github.requests.filter((r) => r.method === "POST" && r.path.endsWith("/reviews"))).toHaveLength(1);
    // tasks saw the review skill and their own instructions, and no task tools
    const taskCalls = model.requests.filter(
      (r) => r.key === "task-key" && r.path.endsWith("/chat/completions"),
    );
    expect(taskCalls).toHaveLength(3);
    // max_parallel 2 (the default): the third task started only once one of the first two ended
    const [first, second, third] = [...taskCalls].sort((a, b) => a.receivedAt - b.receivedAt);
    expect(third!.receivedAt).toBeGreaterThanOrEqual(Math.min(first!.answeredAt!, second!.answeredAt!));
    expect(JSON.stringify(taskCalls[0]!.body)).toContain("# Skill: review");
    expect(offeredTools(taskCalls[0]!.body!)).not.toContain("create_task");
    const orchestratorCalls = model.requests.filter(
      (r) => r.key === "orch-key" && r.path.endsWith("/chat/completions"),
    );
    expect(offeredTools(orchestratorCalls[0]!.body!)).toEqual(
      expect.arrayContaining(["create_task", "list_tasks", "wait_tasks", "read_task_result", "cancel_task"]),
    );

    // GET /trace/:id: the tasks with status, target, duration, diagnostic, under the orchestrator
    const trace = (await (await fetch(`${url}/trace/${id}`)).json()) as {
      tasks: {
        id: string;
        parentId: string | null;
        status: string;
        target: string | null;
        durationMs: number | null;
        diagnostic: { code: string } | null;
      }[];
    };
    const traced = trace.tasks.filter((task) => task.parentId === tasks[0].parent_id);
    expect(traced.map((task) => [task.status, task.target, task.diagnostic?.code ?? null]).sort()).toEqual([
      ["completed", "reviewers", null],
      ["completed", "reviewers", null],
      ["failed", "reviewers", "result_invalid"],
    ]);
    expect(traced.every((task) => typeof task.durationMs === "number")).toBe(true);
    // the trace page draws them on the invocation's timeline, right under the orchestrator
    const page = await (await fetch(`${url}/ui/trace/${id}`)).text();
    const rows = page.split("<tr").filter((row) => row.startsWith(' class="subtask"'));
    expect(rows).toHaveLength(3);
    for (const row of rows)
      expect(row).toMatch(
        /on reviewers[\s\S]*<svg class="timeline"[\s\S]*<rect class="bar(-failed)?" x="[\d.]+"/,
      );
    expect(rows.filter((row) => row.includes("bar-failed"))).toHaveLength(1);
    // svc trace draws them as a tree under the orchestrator; --json keeps the contract's keys
    const tree = await svc(url, "trace", id);
    const taskLines = tree
      .split("\n")
      .filter((line) => line.trim().startsWith("task ") && tasks.some((task) => line.includes(task.id)));
    expect(taskLines).toHaveLength(3);
    for (const line of taskLines)
      expect(line).toMatch(/^ {6,}task tsk_\w+ {2}agent task \d.*(completed|failed)/);
    expect(
      taskLines.filter(
        // the task's usage, read at the gateway, sits between its status and its target
        (line) =>
          /failed {2}tokens in \d+ out \d+ .*target reviewers/.test(line) &&
          line.includes("[result_invalid]"),
      ),
    ).toHaveLength(1);
    const json = JSON.parse(await svc(url, "trace", id, "--json")) as Record<string, unknown>;
    expect(Object.keys(json).sort()).toEqual(["artifacts", "invocations", "tasks", "trigger", "workload"]);
    expect((json.tasks as { id: string }[]).map((task) => task.id)).toEqual(
      expect.arrayContaining(tasks.map((task) => task.id)),
    );
  });

  it("budget.requests counts the tasks' model calls with the orchestrator's: its next call past the budget is refused, budget_exceeded", async () => {
    const id = await postWebhook(url, "thrifty", HOOK_TOKEN, {});
    await waitForTrigger(pool, id);
    const { invocations, tasks: own } = await lineage(pool, id);
    const [invocation] = invocations;
    expect(invocation.diagnostic).toMatchObject({ code: "budget_exceeded", field: "budget.requests" });
    const tasks = await orchestratedTasks(invocation.id);
    expect(tasks.map((task) => task.status)).toEqual(["completed", "completed"]);
    const planner = own.find((task) => task.kind === "agent" && !task.spec);
    const spent = [planner, ...tasks].reduce((sum, task) => sum + task.usage.requests, 0);
    // what stopped it is the sum over the invocation: the orchestrator alone stayed under 5
    expect(planner.usage.requests).toBeLessThan(5);
    expect(spent).toBeGreaterThanOrEqual(5);
    expect(invocation.diagnostic.metadata.used.requests).toBe(spent);
    // the refused call never reached the model API
    expect(model.count("thrifty-key")).toBe(planner.usage.requests);
  });

  it("the ninth create_task with max_tasks 8 is a tool error; the run does not crash", async () => {
    const id = await postWebhook(url, "greedy", HOOK_TOKEN, {});
    await waitForTrigger(pool, id);
    const { invocations } = await lineage(pool, id);
    expect(invocations[0].status, JSON.stringify(invocations[0].diagnostic)).toBe("completed");
    const answers = (invocations[0].result as { answers: string[] }).answers;
    expect(answers).toHaveLength(9);
    // the nine calls of one answer run at once: whichever came ninth is the one refused
    const refused = answers.filter((text) => text.startsWith("max_tasks reached"));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toContain("max_tasks reached: this run already created 8 tasks");
    const ids = answers.filter((text) => !text.startsWith("max_tasks")).map((text) => JSON.parse(text).id);
    expect(new Set(ids).size).toBe(8);
    expect(await orchestratedTasks(invocations[0].id)).toHaveLength(8);
    // the orchestrator ended at once: what had not finished was cancelled, nothing is left open
    await waitFor(
      async () =>
        (await orchestratedTasks(invocations[0].id)).every((task) =>
          ["completed", "cancelled"].includes(task.status),
        ),
      "the greedy run's tasks to settle",
    );
  });

  it("a skill needing pull-request-reviewer without the binding is refused with the binding's name", async () => {
    const id = await postWebhook(url, "unbound", HOOK_TOKEN, {});
    await waitForTrigger(pool, id);
    const { invocations } = await lineage(pool, id);
    const refused = (invocations[0].result as { refused: string }).refused;
    expect(refused).toContain('skill "review" requires the principal binding "pull-request-reviewer"');
    expect(await orchestratedTasks(invocations[0].id)).toHaveLength(0);
  });

  it("a task bound to a token principal is told its binding, never given the principal's long-lived token", async () => {
    // issue 55, finding 6: a task agent steered to print GH_TOKEN into its result would publish it
    const id = await postWebhook(url, "bound", HOOK_TOKEN, {});
    await waitForTrigger(pool, id);
    const { invocations } = await lineage(pool, id);
    expect(invocations[0].result).toEqual({
      read: [
        expect.objectContaining({
          status: "completed",
          result: { principal: "pull-request-reviewer", reviewer_token: false },
        }),
      ],
    });
  });

  it("a task calling create_task gets Forbidden (depth 1)", async () => {
    const id = await postWebhook(url, "nested", HOOK_TOKEN, {});
    await waitForTrigger(pool, id);
    const { invocations } = await lineage(pool, id);
    const [task] = await orchestratedTasks(invocations[0].id);
    expect(task.status).toBe("completed");
    expect(task.result.nested).toMatch(/Forbidden/);
    const calls = model.requests.filter(
      (r) => r.key === "nested-task-key" && r.path.endsWith("/chat/completions"),
    );
    expect(offeredTools(calls[0]!.body!)).not.toContain("create_task");
    expect(await orchestratedTasks(invocations[0].id)).toHaveLength(1);
  });

  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  async function taskPids(workload: string, ids: string[]): Promise<number[]> {
    const pids: number[] = [];
    for (const id of ids) {
      const text = await readFile(join(dir, "workspaces", workload, id, "run", "pid"), "utf8").catch(
        () => "",
      );
      if (text.trim()) pids.push(Number(text));
    }
    return pids;
  }

  it("cancelling the invocation through the API kills its running tasks", async () => {
    const id = await postWebhook(url, "stuck", HOOK_TOKEN, {});
    const { workloads, invocations } = await waitFor(async () => {
      const found = await lineage(pool, id);
      const inv = found.invocations[0];
      if (!inv) return undefined;
      const running = (await orchestratedTasks(inv.id)).filter((task) => task.status === "running");
      return running.length === 2 ? found : undefined;
    }, "both tasks to run");
    const ids = (await orchestratedTasks(invocations[0].id)).map((task) => task.id);
    const pids = await waitFor(async () => {
      const found = await taskPids(workloads[0].id, ids);
      return found.length === 2 ? found : undefined;
    }, "both task processes");
    expect(pids.every(alive)).toBe(true);
    const response = await fetch(`${url}/invocations/${invocations[0].id}/cancel`, { method: "POST" });
    expect(response.status).toBe(200);
    await waitFor(async () => !pids.some(alive), "the task processes to be killed");
    const tasks = await orchestratedTasks(invocations[0].id);
    expect(tasks.map((task) => task.status)).toEqual(["cancelled", "cancelled"]);
    const trigger = await waitForTrigger(pool, id);
    expect(trigger.status).not.toBe("running");
  });

  it("a task past task_timeout fails with agent_timeout and its diagnostic goes back to the orchestrator", async () => {
    const id = await postWebhook(url, "slowpoke", HOOK_TOKEN, {});
    await waitForTrigger(pool, id);
    const { invocations } = await lineage(pool, id);
    expect(invocations[0].status, JSON.stringify(invocations[0].diagnostic)).toBe("completed");
    const waited = (
      invocations[0].result as { waited: { tasks: { status: string; diagnostic: { code: string } }[] } }
    ).waited;
    expect(waited.tasks.map((task) => [task.status, task.diagnostic.code])).toEqual([
      ["failed", "agent_timeout"],
    ]);
    const [task] = await orchestratedTasks(invocations[0].id);
    expect(task.diagnostic.message).toContain("within 1000 ms");
  });

  it("an orchestrator past its timeout fails the run with agent_timeout; its running task is cancelled and killed", async () => {
    const id = await postWebhook(url, "overdue", HOOK_TOKEN, {});
    const trigger = await waitForTrigger(pool, id);
    const { workloads, invocations } = await lineage(pool, id);
    expect(trigger.status).toBe("error");
    expect(invocations[0].diagnostic).toMatchObject({ code: "agent_timeout" });
    expect(invocations[0].diagnostic.message).toContain("orchestrator.timeout");
    const [task] = await orchestratedTasks(invocations[0].id);
    expect(task.status).toBe("cancelled");
    // the task had started its process within the orchestrator's 4 s; it is killed, not left running
    const [pid] = await taskPids(workloads[0].id, [task.id]);
    expect(pid).toBeGreaterThan(0);
    await waitFor(async () => !alive(pid!), "the cancelled task's process to be killed");
  });

  it("three tasks run in parallel; svc's overhead beyond the agents' own time is measured", async () => {
    const chat = (key: string, since: number) =>
      model.requests.filter(
        (r) => r.key === key && r.path.endsWith("/chat/completions") && r.receivedAt >= since,
      );
    const rounds: Record<string, number>[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const started = Date.now();
      const id = await postWebhook(url, "triple", HOOK_TOKEN, {});
      await waitForTrigger(pool, id);
      const { invocations } = await lineage(pool, id);
      expect(invocations[0].result).toEqual({ parts: 3 });
      const trigger = (
        await pool.query("SELECT created_at, updated_at FROM svc.triggers WHERE id = $1", [id])
      ).rows[0];
      const rows = await orchestratedTasks(invocations[0].id);
      const tasks = chat("triple-task-key", started);
      const planner = chat("triple-key", started);
      expect(tasks).toHaveLength(3);
      // all three model calls were in flight at once
      expect(Math.max(...tasks.map((r) => r.receivedAt))).toBeLessThan(
        Math.min(...tasks.map((r) => r.answeredAt!)),
      );
      const ms = (r: { receivedAt: number; answeredAt?: number }) => r.answeredAt! - r.receivedAt;
      const wall = trigger.updated_at.getTime() - trigger.created_at.getTime();
      const agents = planner.reduce((sum, r) => sum + ms(r), 0) + Math.max(...tasks.map(ms));
      const created = Math.min(...rows.map((row) => row.created_at.getTime()));
      const lastFinished = Math.max(...rows.map((row) => row.finished_at.getTime()));
      rounds.push({
        wall,
        agents,
        overhead: wall - agents,
        // a task created → its model call starts (claim, workspace, token, tool session)
        taskStart: Math.max(...tasks.map((r) => r.receivedAt)) - created,
        // the last task's model answered → the orchestrator's next model call (task end, wait_tasks)
        collect:
          Math.min(...planner.map((r) => r.receivedAt).filter((at) => at > lastFinished)) -
          Math.max(...tasks.map((r) => r.answeredAt!)),
      });
    }
    const direct: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const started = Date.now();
      const id = await postWebhook(url, "single", HOOK_TOKEN, {});
      await waitForTrigger(pool, id);
      const trigger = (
        await pool.query("SELECT created_at, updated_at FROM svc.triggers WHERE id = $1", [id])
      ).rows[0];
      const [call] = chat("triple-task-key", started);
      direct.push(
        trigger.updated_at.getTime() - trigger.created_at.getTime() - (call!.answeredAt! - call!.receivedAt),
      );
    }
    const median = (key: string) => rounds.map((r) => r[key]!).sort((a, b) => a - b)[(ROUNDS - 1) / 2]!;
    console.log(
      `three parallel tasks, ${ROUNDS} runs (trigger created → settled): ${rounds.map((r) => `${r.wall} ms`).join(", ")}; ` +
        `median wall ${median("wall")} ms, agents' own time ${median("agents")} ms, svc overhead ${median("overhead")} ms ` +
        `(of it: task created → model call ${median("taskStart")} ms, last task answer → orchestrator's next call ${median("collect")} ms); ` +
        `a direct run of one such agent: svc overhead ${direct.sort((a, b) => a - b)[(ROUNDS - 1) / 2]} ms (load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores)`,
    );
    expect(median("overhead")).toBeGreaterThan(0);
  });

  it("a worker SIGKILLed during a task leaves nothing stuck: the sweeper queues it again, the retried orchestrator finds it", async () => {
    await worker!.stop("SIGTERM");
    const victim = await spawnWorker();
    const id = await postWebhook(url, "fragile", HOOK_TOKEN, {});
    const { workloads, invocations } = await waitFor(async () => {
      const found = await lineage(pool, id);
      const inv = found.invocations[0];
      if (!inv) return undefined;
      return (await orchestratedTasks(inv.id)).some((task) => task.status === "running") ? found : undefined;
    }, "the task to run");
    const [task] = await orchestratedTasks(invocations[0].id);
    const [pid] = await waitFor(async () => {
      const found = await taskPids(workloads[0].id, [task.id]);
      return found.length === 1 ? found : undefined;
    }, "the task process");
    victim.child.kill("SIGKILL");
    await victim.exited;
    await waitFor(async () => !alive(pid!), "the killed worker's task process to die with it");
    worker = await spawnWorker();
    const trigger = await waitForTrigger(pool, id, ["completed", "error"]);
    const after = await lineage(pool, id);
    expect(trigger.status, JSON.stringify(after.invocations[0]?.diagnostic)).toBe("completed");
    const tasks = await orchestratedTasks(invocations[0].id);
    // one task, not two: the retried orchestrator listed it instead of creating it again
    expect(tasks.map((row) => [row.status, row.attempts])).toEqual([["completed", 2]]);
    expect(after.invocations[0].attempts).toBe(2);
    expect((after.invocations[0].result as { waited: { done: boolean } }).waited.done).toBe(true);
    const stuck = await pool.query(
      "SELECT (SELECT count(*) FROM svc.tasks WHERE status IN ('running', 'queued', 'pending'))::int AS tasks, (SELECT count(*) FROM svc.invocations WHERE status IN ('running', 'queued'))::int AS invocations",
    );
    expect(stuck.rows[0]).toEqual({ tasks: 0, invocations: 0 });
    const entries = await readdir(join(dir, "workspaces", workloads[0].id));
    expect(entries).toContain(task.id);
  });
});
