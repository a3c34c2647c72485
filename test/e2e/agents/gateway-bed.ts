// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} is the configuration substitution syntax
import { readdir, readFile, readlink, rm } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import type { AgentCliRuntime } from "../../../shared/agent-clis/pins.ts";
import { installPinnedCli } from "../../support/agent-clis.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import { type RoleProcess, startIngress, startWorkerProcess, writeConfigDir } from "../worker/processes.ts";
import { FakeAnthropic } from "./fake-anthropic.ts";
import { FakeResponses } from "./fake-responses.ts";
import type { LoopbackModel } from "./loopback-model.ts";

export const HOOK_TOKEN = "e2e-gateway-hook-token";

/** One target of the bed: its name, its credentials' real keys, and what else its YAML says. */
export interface BedTarget {
  name: string;
  keys: string[];
  extra?: string;
}

/** One webhook-fired pipeline of the bed: its hook (and name), targets and extra YAML. */
export interface BedPipeline {
  hook: string;
  targets: string[];
  extra?: string;
}

/** Real ingress and worker processes, a real database, the pinned CLI and its loopback model API. */
export interface GatewayBed {
  runtime: AgentCliRuntime;
  fake: LoopbackModel;
  pool: pg.Pool;
  dir: string;
  url: string;
  worker: RoleProcess;
  /** the worker's gateway listener, as it logged it */
  gatewayUrl: string;
  stop(): Promise<void>;
}

const SCHEMA = `result:
  schema:
    type: object
    properties: { summary: { type: string } }
    required: [summary]
`;

export function fakeFor(runtime: AgentCliRuntime): { fake: LoopbackModel; apiPath: string } {
  return runtime === "codex"
    ? { fake: new FakeResponses(), apiPath: "/v1" }
    : { fake: new FakeAnthropic(), apiPath: "" };
}

export async function openGatewayBed(
  runtime: AgentCliRuntime,
  adminUrl: string,
  targets: BedTarget[],
  pipelines: BedPipeline[],
): Promise<GatewayBed> {
  const bin = await installPinnedCli(runtime);
  const { fake, apiPath } = fakeFor(runtime);
  await fake.start();
  const database: TestDatabase = await createTestDatabase(adminUrl);
  const env: Record<string, string> = { HOOK_TOKEN };
  const targetYaml = targets.map((target) => {
    const credentials = target.keys.map((key, index) => {
      env[`KEY_${target.name.toUpperCase()}_${index}`] = key;
      return `{ name: c${index}, secret: "\${KEY_${target.name.toUpperCase()}_${index}}" }`;
    });
    return `  ${target.name}:
    runtime: ${runtime}
    model: ${runtime === "codex" ? "gpt-5" : "claude-sonnet-4-5"}
    base_url: ${fake.url}${apiPath}
    bin: ${bin}
    timeout: 90s
    credentials: [${credentials.join(", ")}]
${target.extra ?? ""}`;
  });
  const sources = pipelines.map((p) => `    ${p.hook}: { verify: bearer, secret: "\${HOOK_TOKEN}" }`);
  const files: Record<string, string> = {
    "daemon.yaml": `webhooks:
  sources:
${sources.join("\n")}
targets:
${targetYaml.join("")}  local: { runtime: command, command: [/bin/cat] }
ask:
  targets: [local]
worker:
  concurrency: 2
`,
    "agents/reviewer/PERSONA.md": "---\nname: reviewer\ndescription: Reviews.\n---\nYou review carefully.\n",
  };
  for (const p of pipelines) {
    files[`pipelines/${p.hook}.yaml`] =
      `version: 1.0.0\nagent: reviewer\ntrigger:\n  webhook: [${p.hook}]\ntargets: [${p.targets.join(", ")}]\ninstructions: Keep a note, then summarise.\n${SCHEMA}${p.extra ?? ""}`;
  }
  const dir = await writeConfigDir(files);
  const roleEnv = { ...env, SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url };
  const ingress = await startIngress(roleEnv);
  const worker = await startWorkerProcess({ ...roleEnv, SVC_DAEMON_URL: ingress.url });
  const listening = await worker.waitForLog(
    (line) => line.event === "gateway.listening",
    "gateway.listening",
  );
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  return {
    ...{ runtime, fake, pool, dir, url: ingress.url, worker },
    gatewayUrl: String(listening.url),
    async stop() {
      await worker.stop();
      await ingress.role.stop();
      await fake.stop();
      await pool.end();
      await database.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A process of this user, as /proc shows it: its environment and command line. */
export interface SeenProcess {
  pid: number;
  cwd: string;
  environ: string;
  cmdline: string;
}

/**
 * Every process of this user whose working directory is under `root` or whose environment or
 * command line names it: an agent's whole process tree, whatever it started.
 */
export async function processesOf(root: string): Promise<SeenProcess[]> {
  const found: SeenProcess[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const [cwd, environ, cmdline] = await Promise.all([
        readlink(`/proc/${entry}/cwd`),
        readFile(`/proc/${entry}/environ`, "utf8"),
        readFile(`/proc/${entry}/cmdline`, "utf8"),
      ]);
      if (cwd.startsWith(root) || environ.includes(root) || cmdline.includes(root))
        found.push({ pid: Number(entry), cwd, environ, cmdline });
    } catch {
      // another user's process, or one that exited while it was read: not the run's
    }
  }
  return found;
}

/** Every regular file under `root` whose bytes contain `needle`. */
export async function filesContaining(root: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const bytes = await readFile(path).catch(() => undefined);
    if (bytes?.includes(needle)) hits.push(path);
  }
  return hits;
}

/** Requests that were model calls (not token counting or the model list). */
export function modelCalls(fake: LoopbackModel, key: string) {
  return fake.requests.filter(
    (request) =>
      request.key === key &&
      request.method === "POST" &&
      /^\/v1\/(messages|responses)(\?|$)/.test(request.path),
  );
}
