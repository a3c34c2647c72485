import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { planMigration } from "../../../shared/config/migrate/index.ts";

const ROOT = join(import.meta.dirname, "../../..");
const dirs: string[] = [];

async function configDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "svc-migrate-unit-"));
  dirs.push(dir);
  for (const [file, text] of Object.entries(files)) {
    await mkdir(join(dir, file, ".."), { recursive: true });
    await writeFile(join(dir, file), text);
  }
  return dir;
}

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe("planMigration", () => {
  it("leaves a configuration in today's shapes alone (the reference configuration)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "svc-migrate-unit-"));
    dirs.push(dir);
    await cp(join(ROOT, "examples/reference/.svc"), dir, { recursive: true });
    const plan = await planMigration({ dir });
    expect(plan.files).toEqual([]);
    expect(plan.changes).toEqual([]);
    expect(plan.todos).toEqual([]);
  });

  it("names a file it cannot parse instead of guessing, and rewrites the others", async () => {
    const dir = await configDir({
      "daemon.yaml": "ask:\n  target: a\n",
      "pipelines/broken.yaml": "prompt: [\n",
    });
    const plan = await planMigration({ dir });
    expect(plan.files.map((file) => file.file)).toEqual(["daemon.yaml"]);
    expect(plan.files[0]!.after).toBe("ask:\n  targets: [a]\n");
    expect(plan.todos).toEqual([
      {
        file: "pipelines/broken.yaml",
        text: "is not valid YAML, so it was not migrated - fix it (svc config validate shows where) and run svc config migrate again",
      },
    ]);
  });

  it("splits a host tool's --opt=$input into two elements, leaves other mixed elements as a to-do, drops env.PATH", async () => {
    const dir = await configDir({
      "daemon.yaml": [
        "host_tools:",
        "  lint:",
        "    description: lint a file",
        "    input: { path: { type: string }, rule: { type: string } }",
        "    exec: /usr/bin/lint",
        '    args: ["--config=$path", "-1", "rule:$rule"]',
        "    env:",
        "      PATH: /usr/bin",
        "      LEVEL: warn",
        "",
      ].join("\n"),
    });
    const plan = await planMigration({ dir });
    const after = plan.files.find((file) => file.file === "daemon.yaml")!.after;
    expect(after).toContain('args: [--config, $path, "-1", "rule:$rule"]');
    expect(after).not.toContain("PATH:");
    expect(after).toContain("LEVEL: warn");
    expect(plan.changes.map((change) => change.text)).toEqual(
      expect.arrayContaining([
        '"host_tools.lint.args[0]" "--config=$path" became "--config", "$path"',
        "deleted \"host_tools.lint.env.PATH\": svc sets it (the ingress's PATH, the run's worktree)",
      ]),
    );
    expect(plan.todos.map((todo) => todo.text)).toEqual([
      'args[2] "rule:$rule" mixes an input reference with text: give the reference an element of its own',
    ]);
  });

  it("does not overwrite a PERSONA.md with a SOUL.md", async () => {
    const persona = "---\ndescription: new\n---\nNew.\n";
    const dir = await configDir({
      "agents/a/SOUL.md": "---\ndescription: old\n---\nOld.\n",
      "agents/a/PERSONA.md": persona,
    });
    const plan = await planMigration({ dir });
    expect(plan.files).toEqual([]);
    expect(plan.todos).toEqual([
      {
        file: "agents/a/SOUL.md",
        text: "agents/a/PERSONA.md exists too - merge SOUL.md into it and delete SOUL.md",
      },
    ]);
  });

  it("keeps both retention tiers' meaning and an unknown knowledge.mode as a to-do", async () => {
    const dir = await configDir({
      "daemon.yaml": "workspaces:\n  retentionDays: 7\n  transcriptRetentionDays: 120\n",
      "pipelines/p.yaml": "knowledge:\n  mode: psychic\n",
    });
    const plan = await planMigration({ dir });
    const daemon = plan.files.find((file) => file.file === "daemon.yaml")!;
    expect(daemon.after).toBe("workspaces:\n  checkoutRetentionDays: 7\n  transcriptRetentionDays: 120\n");
    expect(plan.todos.map((todo) => `${todo.file}:${todo.line}`)).toEqual(["pipelines/p.yaml:2"]);
    expect(plan.todos[0]!.text).toContain(
      'knowledge.mode "psychic" is none of local, mount, ambient, catalog',
    );
  });

  it("makes a legacy claude-code runtime a claude-code target; only its credential's secret is left to do", async () => {
    const dir = await configDir({
      "daemon.yaml": "server:\n  port: 7420\n",
      "pipelines/p.yaml": "runtime: claude-code\nmodel: claude-sonnet-4-5\ncredential: anthropic\n",
    });
    const plan = await planMigration({ dir });
    const daemon = plan.files.find((file) => file.file === "daemon.yaml")!;
    expect(daemon.after).toContain("runtime: claude-code");
    const todos = plan.todos.map((todo) => todo.text).join("\n");
    expect(todos).toContain('the secret of credential "anthropic"');
    expect(todos).not.toContain("a runtime svc runs");
  });
});
