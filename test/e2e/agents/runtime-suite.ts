// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { AgentCliRuntime } from "../../../shared/agent-clis/pins.ts";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { installPinnedCli } from "../../support/agent-clis.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type FakeGitHub, startFakeGitHub } from "../outputs/fake-github.ts";
import { PR_PAYLOAD, postSignedPullRequest, THREAD } from "../outputs/pull-request.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";
import type { LoopbackModel } from "./loopback-model.ts";

const run = promisify(execFile);
const HOOK_TOKEN = "e2e-agent-cli-hook-token";
const GITHUB_SECRET = "e2e-agent-cli-github-secret";
const CODEHOST_TOKEN = "ghs_agentCliDefaultToken001";
const NOTE = { title: "learned", body: "the review found two problems", tags: ["e2e"] };
const REVIEW = { review: { event: "COMMENT", body: "Looks careful; one question on the error path." } };
const SUMMARY = { summary: "done" };

/** The model API keys of the targets, each told to the fake as a behaviour. */
const KEYS = {
  review: "key-review-0001",
  revoked: "key-revoked-0002",
  throttled: "key-throttled-0003",
  overloaded: "key-overloaded-0004",
  broken: "key-broken-0005",
  backup: "key-backup-0006",
  rambling: "key-rambling-0007",
};
const RAMBLE = "I looked around but could not decide.";

function target(runtime: string, name: string, bin: string, baseUrl: string, credentials: string[]) {
  const list = credentials.map((key, index) => `{ name: c${index}, secret: "\${${key}}" }`).join(", ");
  return `  ${name}:
    runtime: ${runtime}
    model: ${runtime === "codex" ? "gpt-5" : "claude-sonnet-4-5"}
    base_url: ${baseUrl}
    bin: ${bin}
    timeout: 60s
    credentials: [${list}]
`;
}

const SUMMARY_SCHEMA = `result:
  schema:
    type: object
    properties: { summary: { type: string } }
    required: [summary]
`;

function files(runtime: string, bin: string, baseUrl: string, github: FakeGitHub): Record<string, string> {
  const pipeline = (hook: string, targets: string) =>
    `version: 1.0.0\nagent: reviewer\ntrigger:\n  webhook: [${hook}]\ntargets: [${targets}]\ninstructions: Keep a note, then summarise.\n${SUMMARY_SCHEMA}`;
  return {
    "daemon.yaml": `webhooks:
  sources:
    github: { verify: codehost, secret: "\${GITHUB_SECRET}" }
    dead-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    cool-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    broken-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
    ramble-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
${target(runtime, "main", bin, baseUrl, ["KEY_REVIEW"])}${target(runtime, "revoked", bin, baseUrl, ["KEY_REVOKED"])}${target(runtime, "busy", bin, baseUrl, ["KEY_THROTTLED", "KEY_OVERLOADED"])}${target(runtime, "broken", bin, baseUrl, ["KEY_BROKEN"])}${target(runtime, "backup", bin, baseUrl, ["KEY_BACKUP"])}${target(runtime, "rambling", bin, baseUrl, ["KEY_RAMBLING"])}  local: { runtime: command, command: [/bin/cat] }
ask:
  targets: [local]
codehost:
  api_url: ${github.url}
  token: \${CODEHOST_TOKEN}
worker:
  concurrency: 2
`,
    "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review carefully.\n",
    "pipelines/pr-review.yaml": `version: 2.0.0
agent: reviewer
trigger:
  codehost: [pull_request.opened]
targets: [main]
instructions: Review the pull request; keep a note of what you learned.
result:
  schema:
    type: object
    properties:
      review: { $ref: svc://schemas/codehost/review/v1 }
    required: [review]
outputs:
  review: { handler: codehost.review }
`,
    "pipelines/dead.yaml": pipeline("dead-hook", "revoked, backup"),
    "pipelines/cool.yaml": pipeline("cool-hook", "busy, backup"),
    "pipelines/broken.yaml": pipeline("broken-hook", "broken, backup"),
    "pipelines/ramble.yaml": pipeline("ramble-hook", "rambling, backup"),
  };
}

/**
 * The end-to-end behaviour of an agent CLI runtime, with the real CLI at its pinned version, real
 * ingress and worker processes, real Postgres, the loopback model API `fake` and a loopback code host.
 */
export function describeAgentRuntime(runtime: AgentCliRuntime, fake: LoopbackModel, apiPath: string) {
  // a run starts a CLI of a few hundred MB up to three times: on a loaded machine that takes seconds
  const options = { timeout: 120_000 };
  describe(
    `runtime ${runtime}: the pinned CLI runs the pipeline (real ingress + worker, loopback model and code host)`,
    options,
    () => {
      let database: TestDatabase;
      let pool: pg.Pool;
      let dir: string;
      let hostHome: string;
      let github: FakeGitHub;
      let ingress: RoleProcess;
      let worker: RoleProcess;
      let url: string;

      beforeAll(async () => {
        const bin = await installPinnedCli(runtime);
        await fake.start();
        fake.behave(KEYS.review, { kind: "script", note: NOTE, result: REVIEW });
        fake.behave(KEYS.backup, { kind: "script", note: NOTE, result: SUMMARY });
        fake.behave(KEYS.revoked, { kind: "error", status: 401 });
        fake.behave(KEYS.throttled, { kind: "error", status: 429, retryAfter: "120" });
        fake.behave(KEYS.overloaded, { kind: "error", status: 529 });
        fake.behave(KEYS.broken, { kind: "error", status: 500 });
        fake.behave(KEYS.rambling, { kind: "script", note: NOTE, result: RAMBLE });
        database = await createTestDatabase(inject("adminDatabaseUrl"));
        github = await startFakeGitHub({ users: { [CODEHOST_TOKEN]: "svc-bot" } });
        dir = await writeConfigDir(files(runtime, bin, `${fake.url}${apiPath}`, github));
        hostHome = await hostAgentConfig();
        const env = {
          SVC_CONFIG_DIR: dir,
          SVC_DATABASE_URL: database.url,
          HOME: hostHome,
          HOOK_TOKEN,
          GITHUB_SECRET,
          CODEHOST_TOKEN,
          KEY_REVIEW: KEYS.review,
          KEY_REVOKED: KEYS.revoked,
          KEY_THROTTLED: KEYS.throttled,
          KEY_OVERLOADED: KEYS.overloaded,
          KEY_BROKEN: KEYS.broken,
          KEY_BACKUP: KEYS.backup,
          KEY_RAMBLING: KEYS.rambling,
        };
        const started = await startIngress(env);
        ingress = started.role;
        url = started.url;
        worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
        pool = new pg.Pool({ connectionString: database.url, max: 2 });
      }, 600_000);

      afterAll(async () => {
        await worker?.stop();
        await ingress?.stop();
        await fake.stop();
        await github?.close();
        await pool?.end();
        await database?.drop();
        if (dir) await rm(dir, { recursive: true, force: true });
        if (hostHome) await rm(hostHome, { recursive: true, force: true });
      });

      const cooldown = async (targetName: string, credential: string) =>
        (
          await pool.query("SELECT * FROM svc.credential_cooldowns WHERE target = $1 AND credential = $2", [
            targetName,
            credential,
          ])
        ).rows[0];

      /** Fires `hook` and waits: the run completes on the backup target after `targetName` was given up. */
      const failedOverToBackup = async (hook: string) => {
        const id = await postWebhook(url, hook, HOOK_TOKEN, {});
        const trigger = await waitForTrigger(pool, id);
        const found = await lineage(pool, id);
        expect(trigger.status, JSON.stringify(found.invocations[0]?.diagnostic)).toBe("completed");
        expect(found.invocations[0]).toMatchObject({ target: "backup", result: SUMMARY });
        return found;
      };

      const runDirOf = async (triggerId: string) => {
        const { workloads, invocations } = await lineage(pool, triggerId);
        return join(dir, "workspaces", workloads[0].id, invocations[0].id, "run");
      };

      it("a signed pull_request.opened runs the CLI: its note is stored by the run's token, the review is published with the version footer", async () => {
        const response = await postSignedPullRequest(url, GITHUB_SECRET, PR_PAYLOAD);
        expect(response.status).toBe(202);
        const id = ((await response.json()) as { trigger: string }).trigger;
        const trigger = await waitForTrigger(pool, id);
        const { invocations, artifacts } = await lineage(pool, id);
        expect(trigger.status, JSON.stringify(invocations[0]?.diagnostic)).toBe("completed");
        expect(invocations[0].result).toEqual(REVIEW);
        // the note was written through svc's MCP server, bound to this invocation by its token
        const notes = await pool.query("SELECT * FROM svc.notes WHERE invocation_id = $1", [
          invocations[0].id,
        ]);
        const transcript = artifacts.find((artifact) => artifact.name === "transcript");
        const text = transcript.rendered as string;
        expect(notes.rows, text).toMatchObject([
          { pipeline: "pr-review", title: NOTE.title, body: NOTE.body },
        ]);
        const [review] = github.reviews.get(THREAD) ?? [];
        expect(review?.body).toContain(REVIEW.review.body);
        expect(review?.body).toContain(`pr-review 2.0.0 · ${id}`);
        // the transcript is the CLI's event stream, with svc's summary of it
        expect(text).toMatch(
          runtime === "codex"
            ? /"type":"mcp_tool_call".*"tool":"submit_note"/
            : /"name":"mcp__svc__submit_note"/,
        );
        expect(text).toMatch(/# tool calls: .*submit_note/);
        expect(text).toMatch(/# tokens: input [1-9]\d*/);
        // svc trace (GET /trace/:id) and the trace page show the same text
        const trace = (await (await fetch(`${url}/trace/${id}`)).json()) as {
          artifacts: Record<string, { rendered: Record<string, string | null> }>;
        };
        expect(trace.artifacts[invocations[0].id]?.rendered.transcript).toContain("# tool calls: ");
        const shown = await svcTrace(url, id);
        expect(shown).toMatch(
          /artifact transcript .*\n( +# mcp servers: svc connected\n)? +# turns: .*\n +# tool calls: .*submit_note.*\n +# tokens: input [1-9]/,
        );
        const page = await (await fetch(`${url}/ui/trace/${id}`)).text();
        expect(page).toMatch(/# tool calls: .*submit_note/);
        expect(page).toContain("# turns: ");
        // the model API saw the credential and nothing else; never the run token
        const agentDir = join(await runDirOf(id), "..", "agent");
        const token = JSON.parse(
          await readFile(join(agentDir, "mcp.json"), "utf8"),
        ).mcpServers.svc.headers.Authorization.replace("Bearer ", "");
        expect(token).toMatch(/^svct_/);
        const seen = fake.requests.filter((request) => request.key === KEYS.review);
        expect(seen.length).toBeGreaterThanOrEqual(runtime === "codex" ? 2 : 1);
        expect(fake.requests.filter((request) => request.key === KEYS.review || request.key === "")).toEqual(
          seen,
        );
        for (const request of fake.requests) {
          expect(request.text).not.toContain(token);
          expect(JSON.stringify(request.headers)).not.toContain(token);
        }
        // the CLI ran with a private HOME in the agent's folder: the host's own agent configuration stayed out
        expect((await stat(join(agentDir, "home"))).isDirectory()).toBe(true);
        await expect(stat(join(hostHome, "hook-ran"))).rejects.toThrow();
        for (const request of fake.requests) expect(request.text).not.toContain("HOST-AGENT-SENTINEL");
      });

      it("a 401 from the model API marks the credential dead with the contract's log line; the next target takes over", async () => {
        await failedOverToBackup("dead-hook");
        expect(await cooldown("revoked", "c0")).toMatchObject({ state: "dead", reason: "HTTP 401" });
        const line = await worker.waitForLog(
          (log) => log.event === "credential.dead" && log.target === "revoked",
          "credential dead",
        );
        expect(String(line.message)).toContain("credential dead: revoked/c0 (HTTP 401)");
        expect(worker.output.join("\n")).not.toContain(KEYS.revoked);
        expect(fake.seen(KEYS.revoked)).toHaveLength(1);
      });

      it("a 429 and an overload park their credentials cooling; the next target takes over", async () => {
        await failedOverToBackup("cool-hook");
        const throttled = await cooldown("busy", "c0");
        expect(throttled).toMatchObject({ state: "cooling", reason: "HTTP 429", dead_at: null });
        expect(throttled.until.getTime()).toBeGreaterThan(Date.now());
        expect(await cooldown("busy", "c1")).toMatchObject({ state: "cooling", dead_at: null });
        expect((await cooldown("busy", "c1")).reason).toMatch(/overloaded/);
      });

      it("any other failure fails over to the next target and leaves the credential alone", async () => {
        const { tasks } = await failedOverToBackup("broken-hook");
        expect(tasks.find((task) => task.name === "agent on broken")).toMatchObject({
          status: "skipped",
          diagnostic: { code: "agent_failed", target: "broken" },
        });
        expect(await cooldown("broken", "c0")).toBeUndefined();
        await waitFor(async () => fake.seen(KEYS.broken).length > 0, "the broken target to be tried");
      });

      it("a final answer with no JSON object is result_invalid, with the CLI's final text in the transcript; no failover", async () => {
        const backupCalls = fake.seen(KEYS.backup).length;
        const id = await postWebhook(url, "ramble-hook", HOOK_TOKEN, {});
        await waitForTrigger(pool, id);
        const { invocations, artifacts } = await lineage(pool, id);
        expect(invocations[0]).toMatchObject({
          status: "failed",
          target: "rambling",
          diagnostic: { code: "result_invalid", target: "rambling" },
        });
        const transcript = artifacts.find((artifact) => artifact.name === "transcript");
        expect(transcript.rendered).toContain(`# final message (no JSON object):\n${RAMBLE}`);
        expect(fake.seen(KEYS.backup).length).toBe(backupCalls);
      });
    },
  );
}

/** `svc trace <id>` as an operator runs it against the daemon at `url`. */
async function svcTrace(url: string, id: string): Promise<string> {
  const bin = join(import.meta.dirname, "../../../bin/svc.js");
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmpdir(), SVC_DAEMON_URL: url };
  return (await run(process.execPath, [bin, "trace", id], { env })).stdout;
}

/**
 * A HOME for the worker holding agent configuration of the host's own user: a Claude Code hook
 * and a Codex MCP server and instructions. A run must see none of it.
 */
async function hostAgentConfig(): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), "svc-e2e-host-home-"));
  await mkdir(join(home, ".claude"), { recursive: true });
  await mkdir(join(home, ".codex"), { recursive: true });
  const hook = { type: "command", command: `touch ${join(home, "hook-ran")}` };
  await writeFile(
    join(home, ".claude", "settings.json"),
    JSON.stringify({ hooks: { SessionStart: [{ hooks: [hook] }], UserPromptSubmit: [{ hooks: [hook] }] } }),
  );
  await writeFile(join(home, ".claude", "CLAUDE.md"), "HOST-AGENT-SENTINEL\n");
  await writeFile(join(home, ".codex", "AGENTS.md"), "HOST-AGENT-SENTINEL\n");
  await writeFile(
    join(home, ".codex", "config.toml"),
    `developer_instructions = "HOST-AGENT-SENTINEL"\n[mcp_servers.host]\ncommand = "touch"\nargs = ["${join(home, "hook-ran")}"]\n`,
  );
  return home;
}
