import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { lineage, waitForTrigger } from "../../integration/worker/helpers.ts";
import { type GatewayBed, HOOK_TOKEN, openGatewayBed } from "../agents/gateway-bed.ts";
import type { ScriptedCall } from "../agents/loopback-model.ts";
import { postWebhook } from "../worker/processes.ts";

const KEY = "sk-oai-agent-env-key-5120";
const NOTE = { title: "env", body: "printed the environment" };
const SUMMARY = { summary: "done" };

/**
 * What the pull request's repository carries, written into the worktree by the setup step as a
 * clone would: a script that prints its environment, as a test script or a Makefile target can.
 */
const SETUP = `setup:
  - run: printf '#!/bin/sh\\nenv\\n' > "$WORKTREE/print-env.sh"
`;

/** The prompt-injected model runs `env` itself, then the repository's script. */
const CALLS: ScriptedCall[] = [
  { name: "exec_command", input: { cmd: "env" } },
  { name: "exec_command", input: { cmd: "sh ./print-env.sh" } },
];

/**
 * The attack: the commands Codex runs for the agent (its shell tool, repository code it executes)
 * print their environment, and what they print goes back to the model, which a prompt injection
 * steers. Codex itself needs the attempt's gateway token (OPENAI_API_KEY) and the run token
 * (SVC_MCP_TOKEN) in its own environment; its commands must get neither, nor anything else of svc's
 * (SVC_*). The run's own variables (WORKTREE, SHA, …) still reach them.
 */
describe("hostile: the commands Codex runs see none of svc's tokens", { timeout: 180_000 }, () => {
  let bed: GatewayBed;

  beforeAll(async () => {
    bed = await openGatewayBed(
      "codex",
      inject("adminDatabaseUrl"),
      [{ name: "codex", keys: [KEY] }],
      [{ hook: "env", targets: ["codex"], extra: SETUP }],
    );
    bed.fake.behave(KEY, { kind: "script", calls: CALLS, note: NOTE, result: SUMMARY });
  }, 600_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it("`env` and a repository script print no gateway token, run token or SVC_* variable", async () => {
    const id = await postWebhook(bed.url, "env", HOOK_TOKEN, {});
    const trigger = await waitForTrigger(bed.pool, id);
    const { workloads, invocations, artifacts } = await lineage(bed.pool, id);
    const transcript = String(artifacts.find((artifact) => artifact.name === "transcript")?.rendered);
    expect(trigger.status, transcript).toBe("completed");
    const mcp = join(bed.dir, "workspaces", workloads[0].id, invocations[0].id, "agent", "mcp.json");
    const runToken = JSON.parse(await readFile(mcp, "utf8")).mcpServers.svc.headers.Authorization.slice(7);

    // what the commands printed, as the model got it back (the note's answer follows them)
    const last = bed.fake.seen(KEY).at(-1)?.body ?? {};
    const outputs = ((last.input ?? []) as { type: string; output?: unknown }[])
      .filter((item) => item.type === "function_call_output")
      .map((item) => JSON.stringify(item.output))
      .slice(0, CALLS.length);
    expect(outputs.length, transcript).toBe(CALLS.length);
    for (const [index, output] of outputs.entries()) {
      const call = JSON.stringify(CALLS[index]);
      // the command ran and printed an environment, the run's variables in it
      expect(output, call).toContain("PATH=");
      expect(output, call).toContain("WORKTREE=");
      expect(output, call).not.toContain(runToken);
      expect(output, call).not.toMatch(/svcgw_|svct_|OPENAI_API_KEY|SVC_[A-Z_]+=/);
    }
    // nor did any other request carry them to the model
    const sent = bed.fake.requests.map((request) => request.text).join("\n");
    expect(sent).not.toContain(runToken);
    expect(sent).not.toMatch(/svcgw_/);
  });
});
