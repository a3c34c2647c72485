import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeConfigDir } from "../worker/processes.ts";
import { svc } from "./support.ts";

const DAEMON = `webhooks:
  sources: {}
targets:
  local:
    runtime: command
    command: ["/bin/cat"]
ask:
  targets: [local]
`;
const PIPELINE = "version: 1.0.0\nagent: helper\ntargets: [local]\ninstructions: run\nsandbox: {}\n";

/** `svc image pull|list` where they cannot do their work: each says why and how to fix it, exit 1. */
describe("svc image without what it needs", () => {
  let dir: string;
  let socketDir: string;
  beforeAll(async () => {
    socketDir = await mkdtemp(join(tmpdir(), "svc-no-engine-"));
    dir = await writeConfigDir({
      "daemon.yaml": `${DAEMON}sandboxes:\n  engine: { socket: ${join(socketDir, "docker.sock")} }\n`,
      "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
      "pipelines/boxed.yaml": PIPELINE,
    });
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(socketDir, { recursive: true, force: true });
  });

  it("svc image pull without sandboxes.registry names the key to set", async () => {
    const run = await svc(["image", "pull", "--dir", dir], {});
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `svc image pull: "sandboxes.registry" is not set in ${dir}/daemon.yaml - add "sandboxes: { registry: <registry>/<path> }" naming where agent:default and studio:default are published\n`,
    );
  });

  it("svc image list with no engine at the socket names the socket and the fix", async () => {
    const run = await svc(["image", "list", "--dir", dir], {});
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `svc image: the container engine at unix://${join(socketDir, "docker.sock")} did not answer (ENOENT) - start the engine (dockerd or podman's API service), or point "sandboxes.engine.socket" in daemon.yaml (or DOCKER_HOST) at its socket\n`,
    );
  });

  it("--help shows examples", async () => {
    for (const command of ["pull", "list"]) {
      const run = await svc(["image", command, "--help"], {});
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`EXAMPLES\n  $ svc image ${command}`);
    }
  });
});
