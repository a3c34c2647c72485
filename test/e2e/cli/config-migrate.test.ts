import { cp, mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, svc } from "./support.ts";

const FIXTURE = join(ROOT, "test/fixtures/config/legacy-0.6");
const ENV = {
  HOME: tmpdir(),
  GITHUB_WEBHOOK_SECRET: "e2e-github",
  LINEAR_WEBHOOK_SECRET: "e2e-linear",
  DEPLOY_HOOK_TOKEN: "e2e-deploy",
  CHAT_BOT_TOKEN: "e2e-chat",
};

/** Every file under `dir`, path → bytes, to compare trees byte for byte. */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out.set(relative(dir, path), (await readFile(path)).toString("base64"));
  }
  return new Map([...out].sort(([a], [b]) => (a < b ? -1 : 1)));
}

interface Problem {
  file: string;
  path: string;
  code: string;
}

async function problems(dir: string): Promise<Problem[]> {
  const run = await svc(["config", "validate", "--json", "--dir", dir], ENV);
  return (JSON.parse(run.stdout).problems as Problem[]).map(({ file, path, code }) => ({ file, path, code }));
}

describe("svc config migrate on a 0.6-era configuration", () => {
  let parent: string;
  let dir: string;
  beforeAll(async () => {
    parent = await mkdtemp(join(tmpdir(), "svc-migrate-"));
    dir = join(parent, ".svc");
    await cp(FIXTURE, dir, { recursive: true });
  });
  afterAll(async () => {
    await rm(parent, { recursive: true, force: true });
  });

  it("the fixture holds every removed key of the contract's Errors table", async () => {
    const removed = (await problems(dir))
      .filter((p) => p.code === "removed_key")
      .map((p) => `${p.file} ${p.path}`);
    for (const key of [
      "pipelines/pr-review.yaml output",
      "pipelines/pr-review.yaml trigger.manual",
      "daemon.yaml tracing",
      "daemon.yaml workspaces.retentionDays",
      "daemon.yaml agents.reviewer.watch",
      "daemon.yaml lifecycle.retrieve",
      "daemon.yaml orchestrator.tools",
      "pipelines/release-announce.yaml orchestrator.tools",
      "daemon.yaml host_tools.format.run",
      "pipelines/pr-review.yaml prompt",
      "agents/releaser/PERSONA.md protocols",
      "skills/review/SKILL.md version",
      "daemon.yaml ask.target",
      "daemon.yaml knowledge.retrieval.rewrite.target",
      "daemon.yaml sandboxes.forwardEnv",
      // and the other rewrites the migration makes
      "daemon.yaml webhooks.secret",
      "daemon.yaml webhooks.tracker",
      "daemon.yaml webhooks.tokens",
      "daemon.yaml defaults.output",
      "daemon.yaml knowledge.mode",
      "pipelines/pr-review.yaml knowledge.mode",
      "pipelines/deploy-notes.yaml runtime",
      "pipelines/deploy-notes.yaml model",
      "pipelines/deploy-notes.yaml effort",
      "pipelines/deploy-notes.yaml credential",
      "pipelines/deploy-notes.yaml fallbacks",
      "pipelines/pr-review.yaml orchestrator",
      "pipelines/release-announce.yaml orchestrator.assess",
      "agents/reviewer/SOUL.md ",
      "protocols ",
      "members.yaml members[0].kind",
    ]) {
      expect(removed, key).toContain(key);
    }
  });

  it("--dry-run prints a unified diff and writes nothing", async () => {
    const before = await snapshot(parent);
    const run = await svc(["config", "migrate", "--dry-run", "--dir", dir], ENV);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("--- a/daemon.yaml\n+++ b/daemon.yaml\n@@ ");
    expect(run.stdout).toContain("--- a/agents/reviewer/SOUL.md\n+++ b/agents/reviewer/PERSONA.md\n");
    expect(run.stdout).toContain("--- a/protocols/be-brief.md\n+++ b/policies/be-brief.md\n");
    expect(run.stdout).toContain("\n-prompt: |\n");
    expect(run.stdout).toContain("\n+instructions: |\n");
    expect(run.stdout).toContain("would change: pipelines/pr-review.yaml\n");
    expect(await snapshot(parent)).toEqual(before);
  });

  it("rewrites every file, keeps comments, writes a backup, and leaves only the to-dos to validate", async () => {
    const original = await snapshot(dir);
    const run = await svc(["config", "migrate", "--dir", dir], ENV);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    for (const file of [
      "agents/releaser/PERSONA.md",
      "agents/reviewer/PERSONA.md (from agents/reviewer/SOUL.md)",
      "daemon.yaml",
      "members.yaml",
      "pipelines/deploy-notes.yaml",
      "pipelines/pr-review.yaml",
      "pipelines/release-announce.yaml",
      "policies/be-brief.md (from protocols/be-brief.md)",
      "policies/cite-lines.md (from protocols/cite-lines.md)",
      "skills/changelog/SKILL.md",
      "skills/review/SKILL.md",
    ]) {
      expect(run.stdout).toContain(`changed: ${file}\n`);
    }
    expect(run.stdout).toContain("7 to-dos left for you");

    const backup = /^backup: (.+)$/m.exec(run.stdout)?.[1];
    expect(backup && dirname(backup)).toBe(parent);
    expect(await snapshot(backup!)).toEqual(original);
    await expect(stat(join(dir, "protocols"))).rejects.toThrow();
    await expect(stat(join(dir, "agents/reviewer/SOUL.md"))).rejects.toThrow();

    const daemon = await readFile(join(dir, "daemon.yaml"), "utf8");
    expect(daemon).toContain(
      "# checkouts and transcripts alike\nworkspaces:\n  checkoutRetentionDays: 14\n  transcriptRetentionDays: 14\n",
    );
    expect(daemon).toContain(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: daemon.yaml's ${ENV} substitution, written literally
      "    codehost:\n      verify: codehost\n      secret: ${GITHUB_WEBHOOK_SECRET}\n",
    );
    // biome-ignore lint/suspicious/noTemplateCurlyInString: daemon.yaml's ${ENV} substitution, written literally
    expect(daemon).toContain("    deploy-hook:\n      verify: bearer\n      secret: ${DEPLOY_HOOK_TOKEN}\n");
    expect(daemon).toContain("      targets: [local-agent] # rewrites the question before retrieval\n");
    expect(daemon).toContain("    exec: /usr/bin/npx\n    args: [biome, format, --write, $path]\n");
    expect(daemon).toContain("      chat: {bot: releasebot, channel: C0123456}\n");
    expect(await readFile(join(dir, "members.yaml"), "utf8")).toContain(
      "kind: agent # the review agent's accounts",
    );
    expect(await readFile(join(dir, "skills/changelog/SKILL.md"), "utf8")).toContain(
      "# bumped with every wording change\nmetadata:\n  version: 1.4.1\n",
    );
    expect(await readFile(join(dir, "pipelines/release-announce.yaml"), "utf8")).toContain(
      "outputs:\n  message:\n    handler: chat.message\n    config: {bot: releasebot, channel: C0123456}\n",
    );

    // what is left is exactly what the to-dos name
    expect(await problems(dir)).toEqual([
      { file: "daemon.yaml", path: "targets.openai-gpt-5.base_url", code: "required" },
      { file: "daemon.yaml", path: "targets.openai-gpt-5.credentials[0]", code: "secret_source_conflict" },
      { file: "daemon.yaml", path: "host_tools.changed-files.exec", code: "required" },
      { file: "daemon.yaml", path: "host_tools.changed-files.run", code: "removed_key" },
      { file: "daemon.yaml", path: "sandboxes.forwardEnv", code: "removed_key" },
      { file: "daemon.yaml", path: "agents.reviewer.watch", code: "removed_key" },
      {
        file: "pipelines/deploy-notes.yaml",
        path: "outputs.review.handler",
        code: "codehost_identity_missing",
      },
      {
        file: "pipelines/pr-review.yaml",
        path: "principals.pull-request-reviewer",
        code: "unknown_principal",
      },
    ]);
    const todos = [...run.stdout.matchAll(/^ {2}(\S+?):(\d+): /gm)].map((m) => `${m[1]}:${m[2]}`);
    expect(todos).toEqual([
      "daemon.yaml:26",
      "daemon.yaml:63",
      "daemon.yaml:73",
      "daemon.yaml:78",
      "pipelines/deploy-notes.yaml:6",
      "pipelines/deploy-notes.yaml:24",
      "pipelines/pr-review.yaml:5",
    ]);
    const lines = daemon.split("\n");
    for (const at of [26, 63, 73, 78]) expect(lines[at - 1]).toMatch(/^\s*# TODO\(svc config migrate\): /);
  });

  it("a second run changes nothing and lists the same to-dos", async () => {
    const before = await snapshot(parent);
    const run = await svc(["config", "migrate", "--dir", dir], ENV);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("nothing to change: the configuration already uses these shapes\n");
    expect(run.stdout).toContain("7 to-dos left for you");
    expect(run.stdout).not.toContain("backup:");
    expect(await snapshot(parent)).toEqual(before);
  });

  it("once the to-dos are done, validate passes", async () => {
    const { writeFile } = await import("node:fs/promises");
    let daemon = await readFile(join(dir, "daemon.yaml"), "utf8");
    daemon = daemon
      .replace("    model: gpt-5\n", "    base_url: https://models.example.com/v1\n    model: gpt-5\n")
      .replace(
        "      - name: openai-a\n",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: daemon.yaml's ${ENV} substitution, written literally
        "      - name: openai-a\n        secret: ${GITHUB_WEBHOOK_SECRET}\n",
      )
      .replace(
        "    run: git diff --name-only main | sort\n",
        "    exec: /usr/bin/git\n    args: [diff, --name-only, main]\n",
      )
      .replace(/sandboxes:\n.*\n.*\n\n/, "")
      .replace(/agents:\n.*\n.*\n.*\n\n/, "")
      .concat(
        // biome-ignore lint/suspicious/noTemplateCurlyInString: daemon.yaml's ${ENV} substitution, written literally
        '\ncodehost:\n  token: ${GITHUB_WEBHOOK_SECRET}\n  principals:\n    "42":\n      token: ${GITHUB_WEBHOOK_SECRET}\n',
      );

    await writeFile(join(dir, "daemon.yaml"), daemon);
    const run = await svc(["config", "validate", "--dir", dir], ENV);
    expect(run.stdout).toContain("configuration valid: 3 pipelines, 3 sources, 2 targets");
    expect(run.code).toBe(0);
  });
});

describe("svc config migrate --to", () => {
  it("applies only the releases up to the one given", async () => {
    const parent = await mkdtemp(join(tmpdir(), "svc-migrate-to-"));
    try {
      const dir = join(parent, ".svc");
      await cp(FIXTURE, dir, { recursive: true });
      const run = await svc(["config", "migrate", "--to", "0.5.0", "--dir", dir], ENV);
      expect(run.code).toBe(0);
      const changed = [...run.stdout.matchAll(/^changed: (.+)$/gm)].map((m) => m[1]);
      expect(changed).toEqual([
        "agents/reviewer/PERSONA.md (from agents/reviewer/SOUL.md)",
        "daemon.yaml",
        "pipelines/deploy-notes.yaml",
        "pipelines/pr-review.yaml",
        "pipelines/release-announce.yaml",
      ]);
      // 0.3.7 moved lifecycle.retrieve; 0.9.0's and 0.10.0's keys are still there
      const daemon = await readFile(join(dir, "daemon.yaml"), "utf8");
      expect(daemon).not.toContain("lifecycle:");
      // biome-ignore lint/suspicious/noTemplateCurlyInString: daemon.yaml's ${ENV} substitution, written literally
      expect(daemon).toContain("  secret: ${GITHUB_WEBHOOK_SECRET}\n");
      expect(daemon).toContain("  target: local-agent # answers `svc ask`\n");
      expect(await readFile(join(dir, "pipelines/pr-review.yaml"), "utf8")).toContain("output: review\n");
      const bad = await svc(["config", "migrate", "--to", "soon", "--dir", dir], ENV);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--to "soon" is not a SemVer version such as 0.9.0');
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  });
});
