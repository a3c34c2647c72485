import { execFile } from "node:child_process";
import { access, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { putSecret } from "../../../db/secrets.ts";
import { DEFAULT_SANDBOX_LIMITS } from "../../../shared/config/sandboxes.ts";
import { createLogger } from "../../../shared/logger.ts";
import { buildImage } from "../../../shared/sandbox/images.ts";
import { createInstanceKey, readInstanceKey } from "../../../shared/secrets/instance-key.ts";
import { workspacePaths } from "../../../shared/workspace-layout.ts";
import { RunSandbox } from "../../../worker/exec/sandbox/sandbox.ts";
import { lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  engineSuiteUnavailable,
  startAuthRegistry,
  startEngineWithImages,
  type TestEngine,
} from "../../support/sandbox-engine.ts";
import { FakeAnthropic } from "../agents/fake-anthropic.ts";
import { FakeChatApi } from "../knowledge/fake-chat-api.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";

const run = promisify(execFile);
const BIN = join(import.meta.dirname, "..", "..", "..", "bin", "svc.js");
const HOOK = "sandbox-hook-token";
const unavailable = engineSuiteUnavailable();
if (unavailable) console.warn(`sandboxed-runs suite skipped: ${unavailable}`);

// the facts a run reports from inside its container, one per line, read back by the test
const FACTS_STEP = [
  'echo "hostname=$(hostname)"',
  'echo "uid=$(id -u)"',
  'echo "worktree=$WORKTREE"',
  'echo "from-step" > "$WORKTREE/written-inside.txt"',
  'cat "$HOST_SECRET" >/dev/null 2>&1 && echo "secret=readable" || echo "secret=unreadable"',
  'touch /etc/svc-probe 2>/dev/null && echo "rootfs=writable" || echo "rootfs=read-only"',
  `node -e 'fetch(process.env.PROBE_URL).then(() => console.log("network=reachable"), () => console.log("network=unreachable"))'`,
].join("; ");
const FACTS_AGENT = `cat > /dev/null; cat "$WORKTREE/written-inside.txt" > "$SURFACE_DIR/agent-saw.txt"; echo '{"ok": true, "uid": '"$(id -u)"'}'`;
// the run token of a sandboxed run asks for a host tool it is scoped for, over MCP, from inside
const TOOL_AGENT = `cat > /dev/null; node -e '
const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "host_probe", arguments: {} } };
fetch(process.env.SVC_MCP_URL, {
  method: "POST",
  headers: { authorization: "Bearer " + process.env.SVC_MCP_TOKEN, "content-type": "application/json", accept: "application/json, text/event-stream" },
  body: JSON.stringify(call),
}).then(async (r) => console.log(JSON.stringify({ status: r.status, answer: await r.text() })))
  .catch((e) => console.log(JSON.stringify({ error: String(e) })));
'`;

// from inside a network-none agent container: what answers, by TCP to host services and by HTTP
// through the forwarder on the container's loopback (SVC_DAEMON_URL), with and without a token
const REACH_AGENT = `cat > /dev/null; node -e '
const net = require("node:net");
const tcp = (port) => new Promise((resolve) => {
  const socket = net.connect({ host: "127.0.0.1", port: Number(port) }, () => { socket.destroy(); resolve("open"); });
  socket.on("error", () => resolve("closed"));
});
const http = (url, init) => fetch(url, { ...init, signal: AbortSignal.timeout(10000) }).then((r) => r.status, () => "unreachable");
const token = { authorization: "Bearer " + process.env.SVC_MCP_TOKEN };
const list = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
Promise.all([
  tcp(process.env.MODEL_PORT),
  tcp(5432),
  http(process.env.SVC_DAEMON_URL + "/triggers"),
  http(process.env.SVC_DAEMON_URL + "/v1/messages", { method: "POST", headers: { "x-api-key": "sk-ant-guess" }, body: "{}" }),
  http(process.env.SVC_MCP_URL, { method: "POST", headers: { ...token, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify(list) }),
]).then(([model, postgres, untokened, guessed, mcp]) => console.log(JSON.stringify({ daemon: process.env.SVC_DAEMON_URL, model, postgres, untokened, guessed, mcp })));
'`;

// an orchestrator in its own agent container: one task over svc's task tools (through the
// forwarder), waited for, its id as the run's result
const ORCHESTRATOR_AGENT = `cat > /dev/null; node -e '
const call = async (name, args) => {
  const response = await fetch(process.env.SVC_MCP_URL, {
    method: "POST",
    headers: { authorization: "Bearer " + process.env.SVC_MCP_TOKEN, "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });
  const text = await response.text();
  const data = text.split("\\n").find((line) => line.startsWith("data: "));
  const message = JSON.parse(data ? data.slice(6) : text);
  if (message.error || message.result.isError) throw new Error(name + " answered " + text);
  return JSON.parse(message.result.content[0].text);
};
(async () => {
  const { id } = await call("create_task", { instructions: "Report what you see." });
  let waited;
  do waited = await call("wait_tasks", { ids: [id], timeout_s: 60 }); while (!waited.done);
  console.log(JSON.stringify({ task: id }));
})().catch((error) => { console.error(String(error)); process.exit(1); });
'`;
// an orchestrated task's agent: what it sees, as its result
const TASK_FACTS_AGENT = `cat > /dev/null; if cat "$HOST_SECRET" >/dev/null 2>&1; then secret=readable; else secret=unreadable; fi; echo "{\\"hostname\\": \\"$(hostname)\\", \\"uid\\": \\"$(id -u)\\", \\"worktree\\": \\"$WORKTREE\\", \\"cwd\\": \\"$(pwd)\\", \\"secret\\": \\"$secret\\"}"`;

function facts(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split("\n")
      .filter((line) => line.includes("="))
      .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
  );
}

const SUMMARY_SCHEMA =
  "result:\n  schema:\n    type: object\n    properties:\n      summary: { type: string }\n    required: [summary]\n";

const pipeline = (name: string, target: string, extra: string) =>
  `version: 1.0.0\nagent: helper\ntrigger:\n  webhook: [${name}-hook]\ntargets: [${target}]\ninstructions: run\nretain_checkout: true\n${extra}`;

/**
 * Sandboxed runs end to end: a real dockerd (temporary directory, no bridge, no iptables) and a
 * loopback registry; the project's agent and studio images built on an mmdebstrap base and pushed
 * there; `svc image pull`; then real `svc ingress` and `svc worker` processes running pipelines in
 * containers.
 */
describe.skipIf(unavailable)("sandboxed runs on a real container engine", () => {
  let engine: TestEngine;
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  /** the daemon of the pipelines on the host's network (the last tests) */
  const hostNet = {} as {
    database: TestDatabase;
    dir: string;
    ingress: RoleProcess;
    worker: RoleProcess;
    url: string;
    pool: pg.Pool;
  };
  const anthropic = new FakeAnthropic();
  const chat = new FakeChatApi();
  const env: Record<string, string> = {
    HOOK_TOKEN: HOOK,
    SVC_WORKER_HEARTBEAT_MS: "300",
    SVC_WORKER_STALE_MS: "3000",
  };
  const svc = (args: string[]) =>
    run(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 });
  const containersOf = async (invocation: string) =>
    engine.docker.listContainers({ all: true, filters: { label: [`svc.invocation=${invocation}`] } });
  /** The engine's container events since `since` (seconds) for containers with these labels. */
  const engineEvents = async (since: number, label: string[]) => {
    const until = Math.ceil(Date.now() / 1000) + 1;
    const stream = await engine.docker.getEvents({ since, until, filters: { type: ["container"], label } });
    let text = "";
    for await (const chunk of stream as AsyncIterable<Buffer>) text += chunk.toString("utf8");
    return text
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { Action: string; Actor: { Attributes: Record<string, string> } });
  };
  const fireAndWait = async (hook: string, daemon: { url: string; pool: pg.Pool } = { url, pool }) => {
    const id = await postWebhook(daemon.url, hook, HOOK, {});
    await waitForTrigger(daemon.pool, id);
    return lineage(daemon.pool, id);
  };

  // the hold pipeline's step is holding once it marked RUN_DIR: a retry then passes straight through
  const heldRun = (trigger: string) =>
    waitFor(async () => {
      const { workloads, invocations } = await lineage(pool, trigger);
      const invocation = invocations[0]?.id as string | undefined;
      if (!invocation) return undefined;
      const marked = await access(join(dir, "workspaces", workloads[0].id, invocation, "run", "held")).then(
        () => true,
        () => false, // not yet
      );
      // the setup steps' container runs; the agent's is created beside it, not started
      const containers = marked ? await containersOf(invocation) : [];
      const setup = containers.find((c) => c.Labels["svc.role"] === "setup" && c.State === "running");
      return setup ? { invocation, container: setup } : undefined;
    }, "the held run's step in its container");

  beforeAll(async () => {
    const started = Date.now();
    const ready = await startEngineWithImages();
    engine = ready.engine;
    const { registry } = ready;
    const hit = ready.cached;
    console.log(`sandbox images ready in the registry in ${Date.now() - started} ms (cached: ${hit})`);

    await anthropic.start();
    await chat.start();
    chat.on("sk-chat-boxed", { kind: "reply", reply: '{"summary": "from the worker"}' });
    anthropic.behave("sk-ant-boxed", {
      kind: "script",
      note: { title: "from the box", body: "written over MCP from inside the container" },
      result: { summary: "boxed" },
    });
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    const hooks = [
      "variant",
      "chat",
      "claude",
      "claude-host",
      "reach",
      "boxed",
      "tool",
      "slow",
      "hold",
      "plain",
      "bench-box",
      "bench-host",
      "tasked",
      "doomed",
    ];
    dir = await writeConfigDir({
      "daemon.yaml": `webhooks:
  sources:
${hooks.map((name) => `    ${name}-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }`).join("\n")}
targets:
  facts:
    runtime: command
    command: ["/bin/sh", "-c", ${JSON.stringify(FACTS_AGENT)}]
    timeout: 60s
  tool:
    runtime: command
    command: ["/bin/sh", "-c", ${JSON.stringify(TOOL_AGENT)}]
    timeout: 60s
  reach:
    runtime: command
    command: ["/bin/sh", "-c", ${JSON.stringify(REACH_AGENT)}]
    timeout: 60s
  planner:
    runtime: command
    command: ["/bin/sh", "-c", ${JSON.stringify(ORCHESTRATOR_AGENT)}]
    timeout: 120s
  gated-planner:
    runtime: command
    command: ["/bin/sh", "-c", ${JSON.stringify(`while [ ! -e "$RUN_DIR/go" ]; do sleep 0.2; done; ${ORCHESTRATOR_AGENT}`)}]
    timeout: 120s
  task-facts:
    runtime: command
    command: ["/bin/sh", "-c", ${JSON.stringify(TASK_FACTS_AGENT)}]
    timeout: 60s
  echo:
    runtime: command
    command: ["/bin/sh", "-c", "cat > /dev/null; echo '{}'"]
    timeout: 60s
  claude:
    runtime: claude-code
    model: claude-sonnet-4-5
    base_url: ${anthropic.url}
    timeout: 120s
    credentials:
      - name: boxed
        secret: sk-ant-boxed
  chat:
    runtime: openai
    model: gpt-boxed
    base_url: ${chat.url}
    timeout: 60s
    credentials:
      - name: boxed
        secret: sk-chat-boxed
  slow:
    runtime: command
    command: ["/bin/sh", "-c", "cat > /dev/null; sleep 120"]
    timeout: 2s
ask:
  targets: [facts]
host_tools:
  probe:
    description: Touches a file on the host.
    exec: /usr/bin/touch
    args: ["__CONFIG_DIR__/host-tool-ran"]
sandboxes:
  engine: { socket: ${engine.socket} }
  registry: ${registry}
  limits: { memory: 512m, cpus: 1, pids: 256 }
  images:
    gpu: { pull: ${registry}/agent:gpu }
    doomed: { pull: ${registry}/agent:doomed }
worker:
  concurrency: 2
  grace_period: 2s
`,
      "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
      "pipelines/boxed.yaml": pipeline(
        "boxed",
        "facts",
        `env:\n  HOST_SECRET: /placeholder\n  PROBE_URL: http://127.0.0.1:9/\nsandbox:\n  image: agent:default\nsetup:\n  - run: ${JSON.stringify(`(${FACTS_STEP}) > "$SURFACE_DIR/facts.txt"`)}\n`,
      ),
      "pipelines/variant.yaml": pipeline(
        "variant",
        "echo",
        "sandbox:\n  image: agent:gpu\nsetup:\n  - run: 'true'\n",
      ),
      "pipelines/slow.yaml": pipeline("slow", "slow", "sandbox: {}\n"),
      "pipelines/hold.yaml": pipeline(
        "hold",
        "facts",
        `sandbox: {}\nsetup:\n  - run: 'if [ -e "$RUN_DIR/held" ]; then exit 0; fi; touch "$RUN_DIR/held"; sleep 300'\n`,
      ),
      "pipelines/bench-box.yaml": pipeline("bench-box", "echo", "sandbox: {}\nsetup:\n  - run: 'true'\n"),
      "pipelines/bench-host.yaml": pipeline("bench-host", "echo", "setup:\n  - run: 'true'\n"),
      // sandboxes.network is none: the model API and svc only through the gateway's socket
      "pipelines/claude.yaml": pipeline("claude", "claude", `sandbox: {}\n${SUMMARY_SCHEMA}`),
      "pipelines/chat.yaml": pipeline("chat", "chat", `sandbox: {}\n${SUMMARY_SCHEMA}`),
      "pipelines/reach.yaml": pipeline(
        "reach",
        "reach",
        `env:\n  MODEL_PORT: "${new URL(anthropic.url).port}"\nsandbox: {}\n`,
      ),
      // the orchestrator and its task, each in an agent container of its own
      "pipelines/tasked.yaml": pipeline(
        "tasked",
        "task-facts",
        "env:\n  HOST_SECRET: /placeholder\nsandbox: {}\norchestrator:\n  strategy: { type: auto }\n  targets: [planner]\n",
      ),
      // its image (absent from the registry) is tagged by the test, and untagged before the task starts
      "pipelines/doomed.yaml": pipeline(
        "doomed",
        "task-facts",
        "sandbox:\n  image: agent:doomed\norchestrator:\n  strategy: { type: auto }\n  targets: [gated-planner]\n",
      ),
      "pipelines/plain.yaml": pipeline(
        "plain",
        "facts",
        `setup:\n  - run: 'echo "hostname=$(hostname)" > "$SURFACE_DIR/facts.txt"'\n`,
      ),
    });
    // the tool's args name the config dir, known only now; a host file the container must not see
    const daemonYaml = join(dir, "daemon.yaml");
    await writeFile(daemonYaml, (await readFile(daemonYaml, "utf8")).replace("__CONFIG_DIR__", dir));
    await writeFile(join(dir, "host-secret.txt"), "host only\n");
    for (const name of ["boxed", "tasked"]) {
      const file = join(dir, "pipelines", `${name}.yaml`);
      await writeFile(
        file,
        (await readFile(file, "utf8")).replace("/placeholder", join(dir, "host-secret.txt")),
      );
    }
    Object.assign(env, { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url });
    const ingressStarted = await startIngress(env);
    ingress = ingressStarted.role;
    url = ingressStarted.url;
    env.SVC_DAEMON_URL = url;
    worker = await startWorkerProcess(env);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  }, 1_800_000);

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    await engine?.stop();
    await anthropic.stop();
    await chat.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it("warns once at start-up which pipelines run on the host", async () => {
    const warning = await worker.waitForLog(
      (line) => line.event === "worker.unsandboxed_pipelines",
      "the unsandboxed-pipelines warning",
    );
    expect(warning).toMatchObject({
      level: "warn",
      pipelines: ["bench-host", "plain"],
      message:
        "pipelines without sandbox run on this host as the worker's user, with its files and network: bench-host, plain",
    });
    expect(worker.logs.filter((line) => line.event === "worker.unsandboxed_pipelines")).toHaveLength(1);
  });

  it("a run whose image the host lacks fails with sandbox_image_missing, naming svc image pull", async () => {
    const { invocations } = await fireAndWait("boxed-hook");
    expect(invocations[0].status).toBe("failed");
    expect(invocations[0].diagnostic).toMatchObject({
      code: "sandbox_image_missing",
      message: `the sandbox image agent:default is not on the container engine at unix://${engine.socket} - run \`svc image pull\` on this host (it fetches agent:default and studio:default from sandboxes.registry)`,
    });
  });

  it("svc image pull fetches agent:default and studio:default with progress per layer, and nothing else", async () => {
    const { stdout } = await svc(["image", "pull"]);
    expect(stdout).toContain(`pulling ${engine.registryHost}/svc/agent:default`);
    expect(stdout).toMatch(/^[0-9a-f]{12}: Pull complete$/m);
    expect(stdout).toContain("pulled agent:default and studio:default from");
    const tags = (await engine.docker.listImages()).flatMap((image) => image.RepoTags ?? []).sort();
    expect(tags).toEqual([
      `${engine.registryHost}/svc/agent:default`,
      `${engine.registryHost}/svc/studio:default`,
      "agent:default",
      "studio:default",
    ]);
    const { stdout: listed } = await svc(["image", "list", "--json"]);
    expect(JSON.parse(listed).images).toEqual([
      expect.objectContaining({
        image: "agent:default",
        present: true,
        pipelines: ["bench-box", "boxed", "chat", "claude", "hold", "reach", "slow", "tasked"],
        source: `svc image pull (${engine.registryHost}/svc/agent:default)`,
      }),
      expect.objectContaining({ image: "studio:default", present: true, pipelines: [] }),
      {
        image: "agent:doomed",
        present: false,
        pipelines: ["doomed"],
        source: `pulled on first use from ${engine.registryHost}/svc/agent:doomed`,
      },
      {
        image: "agent:gpu",
        present: false,
        pipelines: ["variant"],
        source: `pulled on first use from ${engine.registryHost}/svc/agent:gpu`,
      },
    ]);
  }, 300_000);

  it("a container whose start fails once it was made (its image's user is in no /etc/passwd) is removed at once, not at the run's end", async () => {
    // after svc image pull: agent:default is on the engine
    const context = await mkdtemp(join(tmpdir(), "svc-ghost-image-"));
    await writeFile(join(context, "Dockerfile"), "FROM agent:default\nUSER ghost\n");
    await buildImage(engine.docker, context, "ghost-user:test", () => {});
    await rm(context, { recursive: true, force: true });
    const paths = workspacePaths(join(dir, "ghost"), "wl_ghost", "inv_ghost");
    for (const path of [paths.checkout, paths.runDir, paths.surfaceDir, paths.logsDir])
      await mkdir(path, { recursive: true });
    const { setup } = new RunSandbox({
      docker: engine.docker,
      settings: {
        ...{ engine: { socket: engine.socket }, network: "none", user: "1000:1000" },
        ...{ limits: DEFAULT_SANDBOX_LIMITS, images: {} },
      },
      sandbox: { image: "ghost-user:test", mounts: [] },
      ...{ configDir: dir, paths, invocationId: "inv_ghost", workerId: "w_ghost" },
      logger: createLogger({ role: "worker", format: "json", stream: new PassThrough() }),
    });
    const outcome = await setup.run({
      ...{ argv: ["true"], cwd: paths.checkout, env: {} },
      logFile: join(paths.logsDir, "setup-0.log"),
    });
    const failure = {
      code: "sandbox_start_failed",
      message:
        "starting the sandbox container from ghost-user:test failed: the image has no user named ghost in /etc/passwd",
    };
    expect(setup.failure()).toEqual(failure);
    expect(outcome).toMatchObject({ exitCode: null, spawnError: failure.message });
    // the run has not ended (close() was not called): the container is gone already
    expect(await containersOf("inv_ghost")).toEqual([]);
    await setup.close();
  }, 300_000);

  it("svc image pull logs in to a registry that wants it, with the password stored as registry/password", async () => {
    const login = { username: "svc", password: "registry-password-0123" };
    const secured = await startAuthRegistry(engine.registryRoot, login);
    try {
      const daemonYaml = await readFile(join(dir, "daemon.yaml"), "utf8");
      const config = async (auth: string) => {
        const other = await writeConfigDir({
          "daemon.yaml": daemonYaml.replace(
            `  registry: ${engine.registryHost}/svc\n`,
            `  registry: ${secured.host}/svc\n${auth}`,
          ),
          "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
        });
        return other;
      };
      const anonymous = await config("");
      const refused = await svc(["image", "pull", "--dir", anonymous]).catch((error) => error);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        `svc image pull: pulling from ${secured.host}/svc failed: Head "http://${secured.host}/v2/svc/agent/manifests/default": no basic auth credentials - the registry wants a login: set "sandboxes.registry_auth: { username, secret_ref: registry/password }"\n`,
      );
      const withLogin = await config("  registry_auth: { username: svc, secret_ref: registry/password }\n");
      await createInstanceKey(join(withLogin, "instance.key"));
      await putSecret(
        pool,
        await readInstanceKey(join(withLogin, "instance.key")),
        "registry/password",
        login.password,
      );
      const { stdout } = await svc(["image", "pull", "--dir", withLogin]);
      expect(stdout).toContain(`pulled agent:default and studio:default from ${secured.host}/svc`);
      expect(stdout).not.toContain(login.password);
      await rm(anonymous, { recursive: true, force: true });
      await rm(withLogin, { recursive: true, force: true });
    } finally {
      await secured.stop();
    }
  }, 300_000);

  it("a variant is made on first use on the host that runs it, with the progress in the run's log", async () => {
    const { workloads, invocations } = await fireAndWait("variant-hook");
    expect(invocations[0].diagnostic).toBeNull();
    const tags = (await engine.docker.listImages()).flatMap((image) => image.RepoTags ?? []);
    expect(tags).toContain("agent:gpu");
    const log = await readFile(
      join(dir, "workspaces", workloads[0].id, invocations[0].id, "logs", "setup-0.log"),
      "utf8",
    );
    expect(log).toContain(`# sandbox: pulling ${engine.registryHost}/svc/agent:gpu for agent:gpu\n`);
    expect(log).toContain("# sandbox: agent:gpu is ready\n");
    expect(log).toMatch(/^# sandbox: started agent:gpu as container [0-9a-f]{12} on unix:\/\//m);
  }, 120_000);

  it("setup step and agent run in the container: its own hostname, the worktree mounted, no host file, non-root, read-only root, no network", async () => {
    const { workloads, invocations } = await fireAndWait("boxed-hook");
    expect(invocations[0].diagnostic).toBeNull();
    expect(invocations[0].status).toBe("completed");
    const root = join(dir, "workspaces", workloads[0].id);
    const seen = facts(await readFile(join(root, invocations[0].id, "surface", "facts.txt"), "utf8"));
    expect(seen.hostname).not.toBe(hostname());
    expect(seen).toMatchObject({
      uid: "1000",
      worktree: "/svc/worktree",
      secret: "unreadable",
      rootfs: "read-only",
      network: "unreachable",
    });
    // the worktree is the host's checkout: what the step wrote there, the host and the agent both see
    expect(await readFile(join(root, "checkout", "written-inside.txt"), "utf8")).toBe("from-step\n");
    expect(await readFile(join(root, invocations[0].id, "surface", "agent-saw.txt"), "utf8")).toBe(
      "from-step\n",
    );
    expect(invocations[0].result).toEqual({ ok: true, uid: 1000 });
    expect(await containersOf(invocations[0].id)).toEqual([]);
  }, 120_000);

  it("an orchestrated task's agent runs in a container of its own, labelled with the task, removed when the task ends", async () => {
    const since = Math.floor(Date.now() / 1000) - 1;
    const { workloads, invocations } = await fireAndWait("tasked-hook");
    expect(invocations[0].diagnostic).toBeNull();
    expect(invocations[0].status).toBe("completed");
    const { task } = invocations[0].result as { task: string };
    const { rows } = await pool.query("SELECT status, result, diagnostic FROM svc.tasks WHERE id = $1", [
      task,
    ]);
    expect(rows[0]).toMatchObject({ status: "completed", diagnostic: null });
    const seen = rows[0].result as Record<string, string>;
    expect(seen.hostname).not.toBe(hostname());
    expect(seen).toMatchObject({
      uid: "1000",
      worktree: "/svc/worktree",
      cwd: "/svc/worktree",
      secret: "unreadable",
    });
    const transcript = await readFile(
      join(dir, "workspaces", workloads[0].id, task, "logs", "transcript.log"),
      "utf8",
    );
    expect(transcript).toMatch(/^# sandbox: started agent:default as container [0-9a-f]{12} on unix:\/\//m);
    // the engine made and destroyed a container labelled with the task; none is left
    const events = await engineEvents(since, [`svc.task=${task}`]);
    expect(
      events.filter((e) => e.Action === "create" || e.Action === "destroy").map((e) => e.Action),
    ).toEqual(["create", "destroy"]);
    expect(events[0]?.Actor.Attributes).toMatchObject({
      "svc.invocation": invocations[0].id,
      "svc.role": "agent",
    });
    expect(
      await engine.docker.listContainers({ all: true, filters: { label: [`svc.task=${task}`] } }),
    ).toEqual([]);
    expect(await containersOf(invocations[0].id)).toEqual([]);
  }, 180_000);

  it("a task whose container cannot start ends with the sandbox's diagnostic, not the agent's", async () => {
    await engine.docker.getImage("agent:default").tag({ repo: "agent", tag: "doomed" });
    const id = await postWebhook(url, "doomed-hook", HOOK, {});
    // the orchestrator waits in its container, made from agent:doomed, for RUN_DIR/go
    const running = await waitFor(async () => {
      const { workloads, invocations } = await lineage(pool, id);
      const invocation = invocations[0]?.id as string | undefined;
      const containers = invocation ? await containersOf(invocation) : [];
      const started = containers.some((c) => c.Labels["svc.role"] === "agent" && c.State === "running");
      return started ? { workload: workloads[0].id as string, invocation: invocation! } : undefined;
    }, "the orchestrator's container");
    // the image is untagged: the task's container cannot be made, and the variant's pull finds nothing
    await engine.docker.getImage("agent:doomed").remove();
    await writeFile(join(dir, "workspaces", running.workload, running.invocation, "run", "go"), "");
    await waitForTrigger(pool, id);
    const { invocations } = await lineage(pool, id);
    expect(invocations[0].diagnostic).toBeNull();
    const { task } = invocations[0].result as { task: string };
    const { rows } = await pool.query("SELECT status, diagnostic FROM svc.tasks WHERE id = $1", [task]);
    expect(rows[0].status).toBe("failed");
    expect(rows[0].diagnostic).toMatchObject({ code: "sandbox_image_missing" });
    expect(rows[0].diagnostic.message).toMatch(/^making the sandbox image agent:doomed failed: /);
    expect(
      await engine.docker.listContainers({ all: true, filters: { label: [`svc.task=${task}`] } }),
    ).toEqual([]);
  }, 180_000);

  it("the same run unsandboxed sees the host", async () => {
    const { workloads, invocations } = await fireAndWait("plain-hook");
    const root = join(dir, "workspaces", workloads[0].id, invocations[0].id);
    expect(facts(await readFile(join(root, "surface", "facts.txt"), "utf8")).hostname).toBe(hostname());
  });

  // the first answer asks for svc's submit_note: offered only when the CLI reached /mcp from the box
  const claudeRun = async (hook: string, daemon = { url, pool }) => {
    const before = anthropic.seen("sk-ant-boxed", "/v1/messages").length;
    const { invocations } = await fireAndWait(hook, daemon);
    expect(invocations[0].diagnostic).toBeNull();
    expect(invocations[0].result).toEqual({ summary: "boxed" });
    // the model API saw the real key, which only the gateway holds
    expect(anthropic.seen("sk-ant-boxed", "/v1/messages").length - before).toBeGreaterThanOrEqual(2);
    const { rows } = await daemon.pool.query("SELECT title FROM svc.notes WHERE invocation_id = $1", [
      invocations[0].id,
    ]);
    expect(rows).toEqual([{ title: "from the box" }]);
    expect(await containersOf(invocations[0].id)).toEqual([]);
  };

  it("a Claude Code agent runs in a container with network none: the pinned CLI of the image, its model and svc's tools through the gateway's socket", async () => {
    await claudeRun("claude-hook");
  }, 180_000);

  it("an openai agent of a sandboxed pipeline runs in the worker and reaches svc's tools at the worker's own address, not the container's", async () => {
    const { workloads, invocations } = await fireAndWait("chat-hook");
    expect(invocations[0].diagnostic).toBeNull();
    expect(invocations[0].result).toEqual({ summary: "from the worker" });
    const transcript = await readFile(
      join(dir, "workspaces", workloads[0].id, invocations[0].id, "logs", "transcript.log"),
      "utf8",
    );
    // the tool protocol answered: the container's forwarder address means nothing in the worker
    expect(transcript).toMatch(/^# tools: .*submit_note/m);
    expect(transcript).not.toContain("# tools unavailable");
  }, 120_000);

  it("from inside a network-none agent container nothing but the gateway answers, and it carries only what a token allows", async () => {
    const { invocations } = await fireAndWait("reach-hook");
    expect(invocations[0].diagnostic).toBeNull();
    expect(invocations[0].result).toEqual({
      // the forwarder on the container's own loopback, not sandboxes.mcp_url (unset) nor the worker's address
      daemon: "http://127.0.0.1:7420",
      // the model API and Postgres listen on the host's loopback: not the container's
      model: "closed",
      postgres: "closed",
      // to the daemon only with a bearer token: never as the worker's loopback client
      untokened: 401,
      // a model call only with a live gateway token
      guessed: 401,
      // the run's own token reaches svc's tools
      mcp: 200,
    });
  }, 120_000);

  it("a timeout ends the run and removes its container", async () => {
    const { invocations } = await fireAndWait("slow-hook");
    expect(invocations[0].diagnostic).toMatchObject({ code: "agent_timeout" });
    expect(await containersOf(invocations[0].id)).toEqual([]);
  }, 120_000);

  it("a cancellation stops the run and removes its container", async () => {
    const id = await postWebhook(url, "hold-hook", HOOK, {});
    const held = await heldRun(id);
    const response = await fetch(`${url}/invocations/${held.invocation}/cancel`, { method: "POST" });
    expect(response.status).toBe(200);
    await waitFor(
      async () => (await containersOf(held.invocation)).length === 0,
      "the cancelled run's container to be removed",
    );
    expect((await lineage(pool, id)).invocations[0].status).toBe("cancelled");
  }, 120_000);

  it("a killed worker's container is swept by another worker, found by its label", async () => {
    const id = await postWebhook(url, "hold-hook", HOOK, {});
    const held = await heldRun(id);
    expect(held.container.Labels["svc.worker"]).toMatch(/:/);
    await worker.stop("SIGKILL");
    worker = await startWorkerProcess(env);
    // the reaper hands the run over, the sweeper removes the dead worker's container
    await waitFor(
      async () =>
        (await engine.docker.listContainers({ all: true })).some((c) => c.Id === held.container.Id)
          ? undefined
          : true,
      "the dead worker's container to be removed",
      60_000,
    );
    const settled = await waitFor(
      async () => {
        const { rows } = await pool.query("SELECT status FROM svc.triggers WHERE id = $1", [id]);
        return ["completed", "error"].includes(rows[0]?.status) ? rows[0] : undefined;
      },
      "the handed-over run to finish",
      90_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\nworker:\n${worker.output.slice(-40).join("\n")}`);
    });
    expect(settled.status).toBe("completed");
    expect(await containersOf(held.invocation!)).toEqual([]);
  }, 180_000);

  it("measures the per-run cost of a sandbox: the same run, sandboxed and on the host", async () => {
    const durations = async (hook: string) => {
      const out: number[] = [];
      for (let round = 0; round < 5; round++) {
        const { invocations } = await fireAndWait(`${hook}-hook`);
        expect(invocations[0].status).toBe("completed");
        out.push(invocations[0].finished_at.getTime() - invocations[0].started_at.getTime());
      }
      return out.sort((a, b) => a - b);
    };
    const boxed = await durations("bench-box");
    const host = await durations("bench-host");
    const median = (values: number[]) => values[Math.floor(values.length / 2)]!;
    console.log(
      `sandbox overhead per run: median ${median(boxed) - median(host)} ms (sandboxed ${boxed.join(", ")} ms; on the host ${host.join(", ")} ms)`,
    );
    expect(median(boxed)).toBeGreaterThan(median(host));
  }, 180_000);

  /**
   * A sandbox on the host's network (tool, claude-host) is refused while loopback clients act with
   * `*`, which the tests above need on (the reach and cancellation tests): these run on a daemon of
   * their own with `server.loopback_star: false`. The main worker is stopped first: a worker sweeps
   * every labelled container its own database does not know as running, the other's included.
   */
  describe("on the host's network, with server.loopback_star off", () => {
    beforeAll(async () => {
      await worker.stop();
      hostNet.database = await createTestDatabase(inject("adminDatabaseUrl"));
      hostNet.dir = await writeConfigDir({
        "daemon.yaml": `${await readFile(join(dir, "daemon.yaml"), "utf8")}server: { loopback_star: false }\n`,
        "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
        "pipelines/tool.yaml": pipeline("tool", "tool", "tools: [probe]\nsandbox:\n  network: host\n"),
        "pipelines/claude-host.yaml": pipeline(
          "claude-host",
          "claude",
          `sandbox:\n  network: host\n${SUMMARY_SCHEMA}`,
        ),
      });
      const hostNetEnv = { ...env, SVC_CONFIG_DIR: hostNet.dir, SVC_DATABASE_URL: hostNet.database.url };
      const started = await startIngress(hostNetEnv);
      hostNet.ingress = started.role;
      hostNet.url = started.url;
      hostNet.worker = await startWorkerProcess({ ...hostNetEnv, SVC_DAEMON_URL: hostNet.url });
      hostNet.pool = new pg.Pool({ connectionString: hostNet.database.url, max: 2 });
    }, 120_000);

    afterAll(async () => {
      await hostNet.worker?.stop();
      await hostNet.ingress?.stop();
      await hostNet.pool?.end();
      await hostNet.database?.drop();
      if (hostNet.dir) await rm(hostNet.dir, { recursive: true, force: true });
    }, 120_000);

    it("a sandboxed run's token is refused for host tools from inside the container, whatever its scopes", async () => {
      const { invocations } = await fireAndWait("tool-hook", hostNet);
      expect(invocations[0].status).toBe("completed");
      const { status, answer } = invocations[0].result as { status: number; answer: string };
      expect(status).toBe(200);
      expect(JSON.parse(answer)).toEqual({
        jsonrpc: "2.0",
        id: 1,
        error: { code: -32001, message: "Forbidden" },
      });
      await expect(readFile(join(dir, "host-tool-ran"))).rejects.toThrow(/ENOENT/);
    }, 120_000);

    it("with network host the same agent reaches the gateway and svc on the worker's loopback", async () => {
      await claudeRun("claude-host-hook", hostNet);
    }, 180_000);
  });
});
