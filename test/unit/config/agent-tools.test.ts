// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax, quoted literally
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";

const BASE = join(import.meta.dirname, "../../fixtures/config/invalid/host-tool-relative-exec");
let dir: string;

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("agent tool keys", () => {
  it("reads pipeline tools, openai max_turns, command auth_failure and credential env names", async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-agent-tools-"));
    await cp(BASE, dir, { recursive: true });
    await writeFile(
      join(dir, "daemon.yaml"),
      `webhooks:
  sources:
    hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
  local:
    runtime: command
    command: ["/bin/cat"]
    credentials:
      - { name: main, secret: "\${HOOK_TOKEN}", env: AGENT_API_KEY }
    auth_failure: { exit_codes: [77], stderr: "401|invalid api key" }
  gpt:
    runtime: openai
    base_url: https://api.example.com/v1
    model: m
  capped:
    runtime: openai
    base_url: https://api.example.com/v1
    model: m
    max_turns: 5
ask:
  targets: [local]
host_tools:
  lint:
    description: Lint.
    input: { path: { type: path, required: true, description: the file to lint } }
    exec: /usr/local/bin/biome
    args: [check, "$path"]
  log:
    description: Show history.
    input: { range: { type: string, allow_options: true }, plain: { type: string, allow_options: false } }
    exec: /usr/bin/git
    args: [log, "$range", "$plain"]
`,
    );
    await writeFile(
      join(dir, "pipelines", "main.yaml"),
      "version: 1.0.0\nagent: bot\ntargets: [local]\ntools: [lint]\ninstructions: Lint.\n",
    );
    const result = await loadConfig({ dir, env: { HOOK_TOKEN: "t" } });
    expect(result.problems).toEqual([]);
    if (!result.ok) return;
    const { targets, pipelines, hostTools } = result.config;
    expect(pipelines.main?.tools).toEqual(["lint"]);
    expect(targets.local).toMatchObject({
      credentials: [{ name: "main", env: "AGENT_API_KEY" }],
      authFailure: { exitCodes: [77], stderr: "401|invalid api key" },
    });
    expect(targets.gpt).toMatchObject({ maxTurns: 20 });
    expect(targets.capped).toMatchObject({ maxTurns: 5 });
    expect(hostTools.lint?.input.path).toEqual({
      type: "path",
      required: true,
      description: "the file to lint",
    });
    expect(hostTools.log?.input).toEqual({
      range: { type: "string", required: false, allowOptions: true },
      plain: { type: "string", required: false },
    });
  });
});
