// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax, quoted literally
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";

const BASE = join(import.meta.dirname, "../../fixtures/config/invalid/host-tool-relative-exec");
const dirs: string[] = [];

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function load(targets: string, pipeline = "targets: [claude]", ask = "[local]") {
  const dir = await mkdtemp(join(tmpdir(), "svc-agent-cli-config-"));
  dirs.push(dir);
  await cp(BASE, dir, { recursive: true });
  await writeFile(
    join(dir, "daemon.yaml"),
    `targets:
  local:
    runtime: command
    command: ["/bin/cat"]
${targets}
ask:
  targets: ${ask}
`,
  );
  await writeFile(
    join(dir, "pipelines", "main.yaml"),
    `version: 1.0.0\nagent: bot\n${pipeline}\ninstructions: Review.\n`,
  );
  return loadConfig({ dir, env: { KEY: "k" } });
}

const CLAUDE = `  claude:
    runtime: claude-code
    model: claude-sonnet-4-5
    base_url: http://127.0.0.1:9/gateway
    bin: /opt/agents/claude
    timeout: 5m
    max_turns: 12
    credentials: [{ name: main, secret: "\${KEY}" }]
  gpt:
    runtime: codex
    model: gpt-5
    credentials: [{ name: main, secret_ref: target/gpt }]
`;

describe("claude-code and codex targets", () => {
  it("reads model, base_url, bin, timeout, max_turns and credentials; agent_access on the pipeline", async () => {
    const result = await load(CLAUDE, "targets: [claude, gpt]\nagent_access: edit");
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    expect(result.config.targets.claude).toEqual({
      name: "claude",
      runtime: "claude-code",
      model: "claude-sonnet-4-5",
      baseUrl: "http://127.0.0.1:9/gateway",
      bin: "/opt/agents/claude",
      timeoutMs: 300_000,
      maxTurns: 12,
      credentials: [{ name: "main", secret: { kind: "inline", value: "k" } }],
    });
    expect(result.config.targets.gpt).toEqual({
      name: "gpt",
      runtime: "codex",
      model: "gpt-5",
      timeoutMs: 600_000,
      credentials: [{ name: "main", secret: { kind: "stored", name: "target/gpt" } }],
    });
    expect(result.config.pipelines.main?.agentAccess).toBe("edit");
  });

  it.each([
    [
      "a relative bin",
      "  c:\n    runtime: claude-code\n    model: m\n    bin: ./claude\n    credentials: [{ name: a, secret: x }]\n",
      'targets.c.bin" must be an absolute path',
      "error",
    ],
    [
      "no model",
      "  c:\n    runtime: codex\n    credentials: [{ name: a, secret: x }]\n",
      '"targets.c.model" is required',
      "error",
    ],
    [
      "no credential",
      "  c:\n    runtime: claude-code\n    model: m\n",
      '"targets.c.credentials" must list at least one',
      "error",
    ],
    [
      "a credential env",
      "  c:\n    runtime: claude-code\n    model: m\n    credentials: [{ name: a, secret: x, env: KEY }]\n",
      "exports its credential as ANTHROPIC_API_KEY",
      "error",
    ],
    [
      "max_turns on codex",
      "  c:\n    runtime: codex\n    model: m\n    max_turns: 3\n    credentials: [{ name: a, secret: x }]\n",
      "codex has no turn limit of its own",
      "error",
    ],
    [
      "a command key",
      "  c:\n    runtime: codex\n    model: m\n    command: [x]\n    credentials: [{ name: a, secret: x }]\n",
      'unknown key "targets.c.command" is ignored',
      "warning",
    ],
  ])("reports %s with a message naming the key", async (_what, target, message, severity) => {
    const result = await load(target, "targets: [local]");
    const problem = result.problems.find((found) => found.message.includes(message));
    expect(problem, JSON.stringify(result.problems)).toMatchObject({ severity });
  });

  it("refuses an agent CLI target in ask.targets and an unknown agent_access", async () => {
    const result = await load(CLAUDE, "targets: [claude]\nagent_access: push", "[claude]");
    const messages = result.problems.map((problem) => problem.message).join("\n");
    expect(messages).toContain(
      'target "claude" at "ask.targets[0]" runs claude-code, an agent CLI that cannot answer /ask',
    );
    expect(messages).toContain('"agent_access" must be one of read, edit');
  });
});
