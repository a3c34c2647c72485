import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../../shared/config/load.ts";
import type { LoadResult } from "../../../shared/config/types.ts";

/**
 * A sandbox on the host's network shares the host's loopback: while the loopback rule gives a
 * loopback caller `*`, such a sandbox would be more trusted than an unsandboxed run's token.
 */
const DAEMON = `targets:
  local:
    runtime: command
    command: ["/bin/true"]
    timeout: 30s
ask:
  targets: [local]
`;

function pipeline(sandbox: string): string {
  return `version: 1.0.0
agent: helper
targets: [local]
instructions: review
sandbox:
${sandbox}`;
}

const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function load(daemonExtra: string, sandbox: string): Promise<LoadResult> {
  const dir = await mkdtemp(join(tmpdir(), "svc-host-network-"));
  temps.push(dir);
  await mkdir(join(dir, "pipelines"));
  await mkdir(join(dir, "agents", "helper"), { recursive: true });
  await writeFile(
    join(dir, "agents", "helper", "PERSONA.md"),
    "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
  );
  await writeFile(join(dir, "daemon.yaml"), DAEMON + daemonExtra);
  await writeFile(join(dir, "pipelines", "boxed.yaml"), pipeline(sandbox));
  return loadConfig({ dir, env: {} });
}

function errors(result: LoadResult) {
  return result.problems
    .filter((problem) => problem.severity === "error")
    .map(({ file, path, code }) => ({ file, path, code }));
}

describe("network: host and the loopback rule", () => {
  it("a pipeline's sandbox.network: host is refused while server.loopback_star is on (its default)", async () => {
    const result = await load("", "  network: host\n");
    expect(result.ok).toBe(false);
    expect(errors(result)).toEqual([
      { file: "pipelines/boxed.yaml", path: "sandbox.network", code: "invalid_value" },
    ]);
    const message = result.problems[0]!.message;
    expect(message).toContain('"sandbox.network: host"');
    expect(message).toContain("server.loopback_star: false");
    expect(message).toContain("sandbox.network: none");
    expect(message).toContain("engine network");
    // written out, the same with loopback_star: true
    expect(errors(await load("server:\n  loopback_star: true\n", "  network: host\n"))).toHaveLength(1);
  });

  it("sandboxes.network: host in daemon.yaml is refused there, once, not in every pipeline", async () => {
    const result = await load("sandboxes:\n  network: host\n", "  image: agent:default\n");
    expect(result.ok).toBe(false);
    expect(errors(result)).toEqual([
      { file: "daemon.yaml", path: "sandboxes.network", code: "invalid_value" },
    ]);
    expect(result.problems[0]!.message).toContain("server.loopback_star: false");
  });

  it("with server.loopback_star: false either is accepted: every caller needs a token", async () => {
    const off = "server:\n  loopback_star: false\n";
    const pipelineHost = await load(off, "  network: host\n");
    expect(errors(pipelineHost)).toEqual([]);
    expect(pipelineHost.ok && pipelineHost.config.pipelines.boxed!.sandbox!.network).toBe("host");
    const daemonHost = await load(`${off}sandboxes:\n  network: host\n`, "  image: agent:default\n");
    expect(daemonHost.ok && daemonHost.config.sandboxes!.network).toBe("host");
  });

  it("none and an engine network are accepted with the loopback rule on", async () => {
    expect(errors(await load("", "  network: none\n"))).toEqual([]);
    expect(errors(await load("sandboxes:\n  network: svc-agents\n", "  network: svc-agents\n"))).toEqual([]);
  });
});
