import { access, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SANDBOX_LIMITS } from "../../../shared/config/sandboxes.ts";
import { createLogger } from "../../../shared/logger.ts";
import { openEngine } from "../../../shared/sandbox/engine.ts";
import { workspacePaths } from "../../../shared/workspace-layout.ts";
import { containerEnvironment, pathMap } from "../../../worker/exec/sandbox/paths.ts";
import { RunSandbox } from "../../../worker/exec/sandbox/sandbox.ts";

describe("a run's processes inside its container", () => {
  const paths = workspacePaths("/srv/svc", "wl_1", "inv_1");

  it("see the run's directories at container paths, the container's PATH, and HOME on its tmpfs", () => {
    const env = containerEnvironment(
      {
        WORKTREE: paths.checkout,
        RUN_DIR: paths.runDir,
        SURFACE_DIR: paths.surfaceDir,
        SVC_MCP_CONFIG: join(paths.agentDir, "mcp.json"),
        PATH: "/home/svc/.local/bin:/usr/bin",
        HOME: "/home/svc",
        REPO: "acme/widgets",
      },
      pathMap(paths),
    );
    expect(env).toEqual({
      WORKTREE: "/svc/worktree",
      RUN_DIR: "/svc/run",
      SURFACE_DIR: "/svc/surface",
      SVC_MCP_CONFIG: "/svc/agent/mcp.json",
      PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      HOME: "/svc/home",
      REPO: "acme/widgets",
    });
  });

  it("keep an agent CLI's private HOME in the agent's folder, and none under RUN_DIR", () => {
    const env = containerEnvironment({ HOME: join(paths.agentDir, "home") }, pathMap(paths));
    expect(env.HOME).toBe("/svc/agent/home");
    expect(containerEnvironment({ HOME: join(paths.runDir, "home") }, pathMap(paths)).HOME).toBe("/svc/home");
  });
});

describe("a sandbox whose engine does not answer", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-sandbox-unit-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("fails the process with sandbox_engine_unreachable and never runs it on the host", async () => {
    const socket = join(dir, "no-engine.sock");
    const paths = workspacePaths(dir, "wl_1", "inv_1");
    for (const path of [paths.checkout, paths.runDir, paths.surfaceDir, paths.logsDir])
      await mkdir(path, { recursive: true });
    const { setup: sandbox } = new RunSandbox({
      docker: openEngine({ socket }),
      settings: {
        ...{ engine: { socket }, network: "none", user: "1000:1000" },
        limits: DEFAULT_SANDBOX_LIMITS,
        images: {},
      },
      sandbox: { image: "agent:default", mounts: [] },
      configDir: dir,
      paths,
      invocationId: "inv_1",
      workerId: "w",
      logger: createLogger({ role: "worker", format: "json", stream: new PassThrough() }),
    });
    const marker = join(dir, "ran-on-host");
    const outcome = await sandbox.run({
      argv: ["/bin/sh", "-c", `touch ${marker}`],
      cwd: paths.checkout,
      env: {},
      logFile: join(paths.logsDir, "setup-0.log"),
    });
    expect(sandbox.failure()).toEqual({
      code: "sandbox_engine_unreachable",
      message: `the container engine at unix://${socket} did not answer (ENOENT) - start the engine (dockerd or podman's API service), or point "sandboxes.engine.socket" in daemon.yaml (or DOCKER_HOST) at its socket`,
    });
    expect(outcome).toMatchObject({ exitCode: null, spawnError: sandbox.failure()!.message });
    await expect(access(marker)).rejects.toThrow(/ENOENT/);
    await sandbox.close();
  });
});
