import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claudeCodeSettings } from "../../../worker/runtimes/agent-cli/confinement.ts";

/**
 * Claude Code's settings on the host for a review that keeps its result so far in RUN_DIR
 * (worker/run/partial.ts): RUN_DIR opens, and only RUN_DIR; the agent's own folder beside it (the
 * run token's mcp.json) and the configuration directory stay denied.
 */
describe("claude-code confinement with RUN_DIR for a result so far", () => {
  let root: string;
  let worktree: string;
  let runDir: string;
  let agentDir: string;

  beforeAll(async () => {
    root = await realpath(await mkdtemp(join(tmpdir(), "svc-unit-claude-partial-")));
    worktree = join(root, "workspaces", "run_1", "checkout");
    runDir = join(root, "workspaces", "run_1", "inv_1", "run");
    agentDir = join(root, "workspaces", "run_1", "inv_1", "agent");
    for (const dir of [worktree, runDir, agentDir, join(root, "workspaces", "run_1", "inv_1", "logs")])
      await mkdir(dir, { recursive: true });
    await writeFile(join(root, "daemon.yaml"), "");
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  type Permissions = { additionalDirectories: string[]; deny: string[] };
  const permissions = async (access: "read" | "edit", dir?: string) =>
    ((await claudeCodeSettings(worktree, access, dir)) as { permissions: Permissions }).permissions;

  it("RUN_DIR is a working directory no deny rule covers; its siblings and the config directory stay denied", async () => {
    for (const access of ["read", "edit"] as const) {
      const { additionalDirectories, deny } = await permissions(access, runDir);
      expect(additionalDirectories).toEqual([runDir]);
      for (const path of [runDir, join(root, "workspaces", "run_1", "inv_1")]) {
        expect(deny).not.toContain(`Read(/${path})`);
        expect(deny).not.toContain(`Read(/${path}/**)`);
      }
      expect(deny).toContain(`Read(/${agentDir}/**)`);
      expect(deny).toContain(`Read(/${join(root, "daemon.yaml")})`);
      expect(deny).toContain(`Read(/${join(root, "workspaces", "run_1", "inv_1", "logs")}/**)`);
      expect(deny).not.toContain(`Read(/${worktree}/**)`);
      if (access === "edit") expect(deny).toContain(`Edit(/${agentDir}/**)`);
    }
  });

  it("without RUN_DIR the worktree is the only working directory and the invocation's folder is denied whole", async () => {
    const { additionalDirectories, deny } = await permissions("read");
    expect(additionalDirectories).toEqual([]);
    expect(deny).toContain(`Read(/${join(root, "workspaces", "run_1", "inv_1")}/**)`);
    expect(deny).not.toContain(`Read(/${agentDir}/**)`);
  });
});
