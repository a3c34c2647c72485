import { spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pinnedVersion } from "../../../shared/agent-clis/pins.ts";
import { installPinnedCli } from "../../support/agent-clis.ts";

const ROOT = join(import.meta.dirname, "../../..");
const NODE = join(ROOT, "node_modules/.bin/node");

function doctor(dir: string): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [join(ROOT, "bin/svc.js"), "doctor", "--json", "--dir", dir], {
      cwd: ROOT,
      env: { PATH: "/usr/bin:/bin", HOME: tmpdir() },
    });
    let stdout = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout }));
  });
}

/** `svc doctor` finds each configured agent CLI and compares its version with the pin. */
describe("svc doctor: agent CLI versions against deploy/images/agent/versions.json", () => {
  let dir: string;

  beforeAll(async () => {
    const claude = await installPinnedCli("claude-code");
    dir = await mkdtemp(join(tmpdir(), "svc-doctor-agent-clis-"));
    await mkdir(join(dir, "pipelines"));
    await mkdir(join(dir, "agents", "bot"), { recursive: true });
    await writeFile(join(dir, "old-codex"), "#!/bin/sh\necho 'codex-cli 0.1.0'\n");
    await chmod(join(dir, "old-codex"), 0o755);
    const target = (runtime: string, bin: string) =>
      `    runtime: ${runtime}\n    model: m\n    bin: ${bin}\n    credentials: [{ name: k, secret: x }]\n`;
    await writeFile(
      join(dir, "daemon.yaml"),
      `targets:
  local: { runtime: command, command: [/bin/cat] }
  claude:
${target("claude-code", claude)}  gpt:
${target("codex", join(dir, "old-codex"))}  gone:
${target("claude-code", "/nonexistent/claude")}ask:
  targets: [local]
`,
    );
    await writeFile(join(dir, "agents/bot/PERSONA.md"), "---\ndescription: Bot.\n---\nYou help.\n");
    await writeFile(
      join(dir, "pipelines/main.yaml"),
      "version: 1.0.0\nagent: bot\ntargets: [claude]\ninstructions: Go.\n",
    );
  }, 600_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("the pinned CLI is ok, another version is a warning, a missing one an error naming the key", async () => {
    const run = await doctor(dir);
    const report = JSON.parse(run.stdout);
    const check = report.checks.find((found: { name: string }) => found.name === "agent-clis");
    expect(check).toMatchObject({ status: "error" });
    expect(check.detail).toContain(`claude-code ${pinnedVersion("claude-code")} (pinned)`);
    expect(check.detail).toContain(`codex 0.1.0 (pinned ${pinnedVersion("codex")})`);
    const problems = report.problems.filter((problem: { code: string }) =>
      problem.code.startsWith("agent_cli"),
    );
    expect(problems).toMatchObject([
      { code: "agent_cli_version", severity: "warning", path: "targets.gpt.bin" },
      { code: "agent_cli_missing", severity: "error", path: "targets.gone.bin" },
    ]);
    expect(problems[0].message).toContain(
      `the pin is ${pinnedVersion("codex")} - install @openai/codex@${pinnedVersion("codex")}`,
    );
    expect(run.code).toBe(1);
  });
});
