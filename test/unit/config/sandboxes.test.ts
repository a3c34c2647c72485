import { describe, expect, it } from "vitest";
import {
  DEFAULT_SANDBOX_LIMITS,
  readPipelineSandbox,
  readSandboxes,
} from "../../../shared/config/sandboxes.ts";
import { ConfigFile } from "../../../shared/config/source.ts";
import type { ConfigProblem } from "../../../shared/config/types.ts";

function read(root: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) {
  const problems: ConfigProblem[] = [];
  const settings = readSandboxes(new ConfigFile("daemon.yaml", problems), root, env);
  return { settings, messages: problems.map((problem) => problem.message) };
}

describe("sandboxes block", () => {
  it("fills every default when daemon.yaml has none", () => {
    expect(read({})).toEqual({
      settings: {
        engine: { socket: "/var/run/docker.sock" },
        network: "none",
        user: "1000:1000",
        limits: { memoryBytes: 4 * 1024 ** 3, cpus: 2, pids: 1024, tmpfsBytes: 512 * 1024 ** 2 },
        images: {},
      },
      messages: [],
    });
  });

  it("keeps the default of every limit sandboxes.limits leaves out, tmpfs size included", () => {
    const { settings, messages } = read({ sandboxes: { limits: { tmpfs: "1g", pids: 256 } } });
    expect(messages).toEqual([]);
    expect(settings.limits).toEqual({ ...DEFAULT_SANDBOX_LIMITS, tmpfsBytes: 1024 ** 3, pids: 256 });
    expect(read({ sandboxes: { limits: { tmpfs: "1k" } } }).messages).toEqual([
      'daemon.yaml: "sandboxes.limits.tmpfs" must be a size of at least 6m such as 512m or 4g (got "1k")',
    ]);
  });

  it("takes the engine from DOCKER_HOST when no socket is configured, and the socket over it", () => {
    expect(read({}, { DOCKER_HOST: "unix:///tmp/d/docker.sock" }).settings.engine).toEqual({
      socket: "/tmp/d/docker.sock",
    });
    expect(read({}, { DOCKER_HOST: "tcp://127.0.0.1:2376" }).settings.engine).toEqual({
      host: "127.0.0.1",
      port: 2376,
    });
    const configured = read(
      { sandboxes: { engine: { socket: "/run/podman/podman.sock" } } },
      {
        DOCKER_HOST: "unix:///tmp/d/docker.sock",
      },
    );
    expect(configured.settings.engine).toEqual({ socket: "/run/podman/podman.sock" });
  });

  it("reads the issue's example block", () => {
    const { settings, messages } = read({
      sandboxes: {
        engine: { socket: "/var/run/docker.sock" },
        registry: "registry.example.com/svc/",
        registry_auth: { username: "svc", secret_ref: "registry/password" },
        network: "svc-agents",
        mcp_url: "http://svc-ingress:7420/mcp",
        limits: { memory: "4g", cpus: 2, pids: 512 },
        images: { python: { build: "images/python" }, gpu: { pull: "registry.example.com/svc/agent:gpu" } },
      },
    });
    expect(messages).toEqual([]);
    expect(settings).toMatchObject({
      registry: "registry.example.com/svc",
      registryAuth: { username: "svc", secret: { kind: "stored", name: "registry/password" } },
      network: "svc-agents",
      mcpUrl: "http://svc-ingress:7420/mcp",
      limits: { ...DEFAULT_SANDBOX_LIMITS, memoryBytes: 4 * 1024 ** 3, cpus: 2, pids: 512 },
      images: {
        python: { name: "python", build: "images/python" },
        gpu: { name: "gpu", pull: "registry.example.com/svc/agent:gpu" },
      },
    });
  });

  it("refuses root, a bad size, a variant with both sources and one outside .svc/, naming each key", () => {
    const { messages } = read({
      sandboxes: {
        user: "0:0",
        limits: { memory: "lots" },
        images: { both: { build: "images/x", pull: "r/x:1" }, out: { build: "../elsewhere" } },
      },
    });
    expect(messages).toEqual([
      'daemon.yaml: "sandboxes.user" must be a numeric non-root <uid>:<gid> such as 1000:1000 (got "0:0") - a sandbox never runs as root',
      'daemon.yaml: "sandboxes.limits.memory" must be a size of at least 6m such as 512m or 4g (got "lots")',
      'daemon.yaml: "sandboxes.images.both" must set exactly one of "build" (a directory with a Dockerfile, relative to .svc/) and "pull" (an image reference)',
      'daemon.yaml: "sandboxes.images.out.build" must be a directory inside .svc/, written relative to it, e.g. images/out (got "../elsewhere")',
    ]);
  });
});

describe("pipeline sandbox", () => {
  function pipeline(sandbox: unknown, principals = false) {
    const problems: ConfigProblem[] = [];
    const value = readPipelineSandbox(new ConfigFile("pipelines/p.yaml", problems), { sandbox }, principals);
    return { value, messages: problems.map((problem) => problem.message) };
  }

  it("defaults the image to agent:default and reads mounts and network", () => {
    expect(pipeline({ mounts: ["/srv/a:/a", "/srv/b/:/b:rw", "/srv/c:/c:ro"], network: "host" })).toEqual({
      value: {
        image: "agent:default",
        network: "host",
        mounts: [
          { host: "/srv/a", container: "/a", readOnly: false },
          { host: "/srv/b", container: "/b", readOnly: false },
          { host: "/srv/c", container: "/c", readOnly: true },
        ],
      },
      messages: [],
    });
  });

  it("refuses an image outside the three forms and a malformed mount", () => {
    expect(pipeline({ image: "ubuntu:latest", mounts: ["/a:/b:rx"] }).messages).toEqual([
      'pipelines/p.yaml: "sandbox.image" must be agent:default, studio:default or agent:<variant> (got "ubuntu:latest")',
      'pipelines/p.yaml: "sandbox.mounts[0]" must be written <host path>:<container path>[:ro|rw], e.g. /srv/cache:/cache:ro (got "/a:/b:rx")',
    ]);
  });
});
