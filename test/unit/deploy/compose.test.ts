import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { DEPLOY, findTool, reportMissingTool, runTool } from "./tools.ts";

const COMPOSE_FILE = join(DEPLOY, "compose.yaml");
// biome-ignore lint/suspicious/noExplicitAny: the compose file is checked field by field
type Any = any;

const text = await readFile(COMPOSE_FILE, "utf8");
// `<<` merge keys are how the file shares the svc settings between services
const compose = parse(text, { merge: true }) as Any;
const services = compose.services as Record<string, Any>;
const svcServices = ["ingress-1", "ingress-2", "worker-1", "worker-2"];

describe("deploy/compose.yaml (in-process)", () => {
  it("runs Postgres 17, two ingress replicas, two workers and a proxy; Chroma under profile vector", () => {
    expect(Object.keys(services).sort()).toEqual([
      "chroma",
      "ingress-1",
      "ingress-2",
      "postgres",
      "proxy",
      "worker-1",
      "worker-2",
    ]);
    expect(services.postgres.image).toMatch(/^postgres:17(\.|$|-)/);
    expect(services.proxy.image).toMatch(/^nginx:/);
    for (const name of svcServices) {
      const role = name.replace(/-\d+$/, "");
      expect(services[name].command, name).toEqual([role]);
      expect(services[name].image, name).toBe(services["ingress-1"].image);
    }
    // one service builds the image from deploy/Dockerfile, the others reuse its tag
    expect(services["ingress-1"].build).toEqual({ context: "..", dockerfile: "deploy/Dockerfile" });
    expect(svcServices.filter((n) => services[n].build)).toEqual(["ingress-1"]);
  });

  it("health: ingress on /health, Postgres with pg_isready, the proxy through to /health, no fake worker check", () => {
    for (const name of ["ingress-1", "ingress-2"]) {
      expect(services[name].healthcheck.test.join(" ")).toContain("http://127.0.0.1:7420/health");
      expect(services[name].healthcheck.test.join(" ")).toContain("r.status === 200");
    }
    for (const name of ["worker-1", "worker-2"])
      expect(services[name].healthcheck).toEqual({ disable: true });
    expect(services.postgres.healthcheck.test).toContain("pg_isready");
    expect(services.proxy.healthcheck.test.join(" ")).toContain("/health");
    for (const name of svcServices) {
      expect(services[name].depends_on.postgres.condition, name).toBe("service_healthy");
    }
    expect(services.proxy.depends_on["ingress-1"].condition).toBe("service_healthy");
    expect(services.proxy.depends_on["ingress-2"].condition).toBe("service_healthy");
  });

  it("the vector engine's Chroma: profile vector, port 8000 inside the network, persistent volume", () => {
    expect(services.chroma.profiles).toEqual(["vector"]);
    expect(services.chroma.image).toMatch(/^chromadb\/chroma:1\./);
    expect(services.chroma.expose).toEqual(["8000"]);
    expect(services.chroma.ports).toBeUndefined();
    expect(services.chroma.volumes).toEqual(["chroma-data:/data"]);
  });

  it("mounts .svc/ read-only; each svc container writes only its knowledge index (and a worker its workspaces)", () => {
    for (const name of svcServices) {
      const mounts = services[name].volumes as Any[];
      const config = mounts.find((m) => m.target === "/etc/svc");
      expect(config, name).toMatchObject({
        type: "bind",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the compose interpolation itself
        source: "${SVC_CONFIG_SOURCE:-../.svc}",
        read_only: true,
      });
      expect(services[name].environment.SVC_CONFIG_DIR).toBe("/etc/svc");
      expect(services[name].read_only, name).toBe(true);
      const writable = mounts.filter((m) => !m.read_only).map((m) => m.target);
      expect(writable, name).toEqual(
        name.startsWith("worker")
          ? ["/etc/svc/workspaces", "/etc/svc/data/knowledge"]
          : ["/etc/svc/data/knowledge"],
      );
    }
    expect(services["worker-1"].volumes[1].source).not.toBe(services["worker-2"].volumes[1].source);
    const indexes = svcServices.map(
      (n) => services[n].volumes.find((m: Any) => m.target.endsWith("knowledge")).source,
    );
    expect(new Set(indexes).size).toBe(svcServices.length);
  });

  it("hands the instance key over as a Docker secret, never as a value", () => {
    expect(Object.keys(compose.secrets)).toEqual(["instance_key"]);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the compose interpolation itself
    expect(compose.secrets.instance_key.file).toBe("${SVC_INSTANCE_KEY_SOURCE:-./secrets/instance.key}");
    for (const name of svcServices) {
      expect(services[name].secrets, name).toEqual(["instance_key"]);
      expect(services[name].environment.SVC_INSTANCE_KEY_FILE).toBe("/run/secrets/instance_key");
    }
  });

  it("takes the Postgres password only from the environment, and requires it", () => {
    const required = /^\$\{POSTGRES_PASSWORD:\?[^}]+\}$/;
    expect(services.postgres.environment.POSTGRES_PASSWORD).toMatch(required);
    for (const name of svcServices) {
      const url = services[name].environment.SVC_DATABASE_URL as string;
      expect(url).toMatch(/^postgres:\/\/svc:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432\/svc$/);
    }
    // no literal secret anywhere: every password-ish value is an interpolation
    for (const [, key, value] of text.matchAll(/^\s*([A-Z_]*(?:PASSWORD|TOKEN|SECRET)[A-Z_]*):\s*(.+)$/gm)) {
      expect(value, key).toMatch(/^\$\{/);
    }
  });

  it("listens only on loopback, through the proxy; SVC_HOST opens the containers to the proxy only", () => {
    const published = Object.entries(services).filter(([, s]) => s.ports);
    expect(published.map(([n]) => n)).toEqual(["proxy"]);
    for (const port of services.proxy.ports as string[]) expect(port).toMatch(/^127\.0\.0\.1:/);
    for (const name of svcServices) expect(services[name].environment.SVC_HOST).toBe("0.0.0.0");
  });

  it("stops with SIGTERM and waits for the drain", () => {
    for (const name of svcServices) expect(services[name].stop_signal).toBe("SIGTERM");
    const seconds = (s: string) => Number(/^(\d+)s$/.exec(s)?.[1]);
    // worker.grace_period defaults to 30s; the stop timeout leaves room for up to 5m
    expect(seconds(services["worker-1"].stop_grace_period)).toBeGreaterThan(300);
    expect(seconds(services["ingress-1"].stop_grace_period)).toBeGreaterThanOrEqual(30);
  });

  it("mounts proxy configuration files that exist", async () => {
    for (const mount of services.proxy.volumes as Any[]) {
      expect(mount.read_only).toBe(true);
      expect((await stat(join(DEPLOY, mount.source))).isFile()).toBe(true);
    }
  });

  it("keeps deploy/.env and deploy/secrets/ out of git and out of the image build context", async () => {
    const ignore = (await readFile(join(DEPLOY, ".gitignore"), "utf8")).split("\n");
    expect(ignore).toContain(".env");
    expect(ignore).toContain("secrets/");
    const dockerignore = (await readFile(join(DEPLOY, "..", ".dockerignore"), "utf8")).split("\n");
    for (const entry of ["deploy/secrets", "**/.env", "**/instance.key", ".svc"])
      expect(dockerignore).toContain(entry);
  });
});

const dockerCompose = findTool("docker-compose");
if (!dockerCompose) reportMissingTool("docker-compose", "docker-compose -f deploy/compose.yaml config");

/** 1 for the Python Compose (`docker-compose version --short` says 1.x), else 2 and later. */
const composeMajor = dockerCompose
  ? Number(/^v?(\d+)\./.exec(runTool(dockerCompose, ["version", "--short"]).stdout.trim())?.[1] ?? 2)
  : undefined;

describe.skipIf(!dockerCompose)("deploy/compose.yaml (docker-compose config)", () => {
  let dir: string;
  let emptyEnvFile: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-compose-"));
    // an empty env file, so an operator's deploy/.env cannot change the outcome
    emptyEnvFile = join(dir, "empty.env");
    await writeFile(emptyEnvFile, "");
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function config(extraEnv: Record<string, string>) {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ...extraEnv };
    return runTool(dockerCompose!, ["-f", COMPOSE_FILE, "--env-file", emptyEnvFile, "config"], { env });
  }

  it("passes with POSTGRES_PASSWORD set, and resolves the interpolations", () => {
    const result = config({ POSTGRES_PASSWORD: "0123456789abcdef" });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const resolved = parse(result.stdout) as Any;
    // services of a profile (chroma: vector) start only when the profile is asked for. Compose 2's
    // `config` leaves them out; Compose 1 (1.28+, Debian's 1.29) lists every service and keeps the
    // profile on it, which is what keeps it from starting
    const profiled = Object.keys(services).filter((name) => services[name].profiles);
    expect(Object.keys(resolved.services).sort()).toEqual(
      Object.keys(services)
        .filter((name) => composeMajor === 1 || !profiled.includes(name))
        .sort(),
    );
    if (composeMajor === 1)
      for (const name of profiled)
        expect(resolved.services[name].profiles, name).toEqual(services[name].profiles);
    expect(resolved.services["worker-2"].environment.SVC_DATABASE_URL).toBe(
      "postgres://svc:0123456789abcdef@postgres:5432/svc",
    );
    expect(resolved.secrets.instance_key.file).toBe(join(DEPLOY, "secrets", "instance.key"));
    const configMount = resolved.services["ingress-2"].volumes.find((v: Any) => v.target === "/etc/svc");
    expect(configMount).toMatchObject({ read_only: true, source: join(DEPLOY, "..", ".svc") });
  });

  it("fails, naming the variable, when POSTGRES_PASSWORD is unset", () => {
    const result = config({});
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain("set POSTGRES_PASSWORD");
  });
});
