import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { migrate } from "../../../db/migrate.ts";
import type { SandboxSettings } from "../../../shared/config/sandbox-types.ts";
import { DEFAULT_SANDBOX_LIMITS } from "../../../shared/config/sandboxes.ts";
import { workspacePaths } from "../../../shared/workspace-layout.ts";
import { CredentialCooldowns } from "../../../worker/credentials/cooldowns.ts";
import { CONTAINER_GATEWAY_URL } from "../../../worker/exec/sandbox/forwarder.ts";
import { createOptions, type SandboxRequest } from "../../../worker/exec/sandbox/options.ts";
import { RunSandbox } from "../../../worker/exec/sandbox/sandbox.ts";
import { sweepSandboxContainers } from "../../../worker/exec/sandbox/sweep.ts";
import { ModelGateway } from "../../../worker/gateway/gateway.ts";
import { captureLogger, lineage, waitFor, waitForTrigger } from "../../integration/worker/helpers.ts";
import { createTestDatabase, type TestDatabase } from "../../support/database.ts";
import {
  buildBusyboxImage,
  engineSuiteUnavailable,
  pullTagged,
  pushAs,
  startEngineWithImages,
  type TestEngine,
} from "../../support/sandbox-engine.ts";
import { ScriptedModelApi, targetOn } from "../hostile/gateway-rig.ts";
import {
  postWebhook,
  type RoleProcess,
  startIngress,
  startWorkerProcess,
  writeConfigDir,
} from "../worker/processes.ts";

const HOOK = "any-image-hook-token";
const MODEL_KEY = "sk-ant-any-image";
/** On a forwarder's container, its agent container's id (worker/exec/sandbox/forwarder.ts). */
const FORWARDER_LABEL = "svc.forwarder";
const unavailable = engineSuiteUnavailable();
if (unavailable) console.warn(`any-image sandbox suite skipped: ${unavailable}`);

/**
 * The agent, in busybox's sh: svc's submit_note over the tool protocol with busybox's wget, at the
 * address the run gave it; the result says whether the image has node and what wget got back.
 */
const WGET_AGENT = `cat > /dev/null
if command -v node >/dev/null 2>&1; then node=present; else node=absent; fi
call='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"submit_note","arguments":{"title":"from busybox","body":"written with wget"}}}'
answer=$(wget -q -O - --header "Authorization: Bearer $SVC_MCP_TOKEN" --header "Content-Type: application/json" \\
  --header "Accept: application/json, text/event-stream" --post-data "$call" "$SVC_MCP_URL") || exit 7
case "$answer" in *trusted*) noted=true ;; *) noted=false ;; esac
echo "{\\"node\\": \\"$node\\", \\"mcp\\": \\"$SVC_MCP_URL\\", \\"noted\\": $noted}"`;

/**
 * A sandbox whose image is nothing but busybox (no node, nothing of svc's) on `network: none`: the
 * model gateway's forwarder runs beside the agent's container, from svc's own image, so the agent
 * still reaches svc's tools and its model through the gateway. A real dockerd, real containers,
 * real `svc ingress` and `svc worker` processes.
 */
describe.skipIf(unavailable)("a sandbox from an image without node", () => {
  let engine: TestEngine;
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  let ingress: RoleProcess;
  let worker: RoleProcess;
  let url: string;
  const env: Record<string, string> = { HOOK_TOKEN: HOOK };
  const forwarders = () => engine.docker.listContainers({ all: true, filters: { label: [FORWARDER_LABEL] } });

  beforeAll(async () => {
    const ready = await startEngineWithImages();
    engine = ready.engine;
    // what `svc image pull` leaves on a worker host: the forwarder's image
    await pullTagged(engine, ready.registry, "agent:default");
    await buildBusyboxImage(engine.docker, "agent:tiny");
    await pushAs(engine.docker, "agent:tiny", `${ready.registry}/agent:tiny`);
    database = await createTestDatabase(inject("adminDatabaseUrl"));
    dir = await writeConfigDir({
      "daemon.yaml": `webhooks:
  sources:
    tiny-hook: { verify: bearer, secret: "\${HOOK_TOKEN}" }
targets:
  wget:
    runtime: command
    command: ["/bin/sh", "-c", ${JSON.stringify(WGET_AGENT)}]
    timeout: 60s
ask:
  targets: [wget]
sandboxes:
  engine: { socket: ${engine.socket} }
  registry: ${ready.registry}
  images:
    tiny: { pull: ${ready.registry}/agent:tiny }
worker:
  grace_period: 2s
`,
      "agents/helper/PERSONA.md": "---\nname: helper\ndescription: Helps.\n---\nYou help.\n",
      // sandboxes.network is none by default: svc only through the gateway's socket
      "pipelines/tiny.yaml": `version: 1.0.0
agent: helper
trigger:
  webhook: [tiny-hook]
targets: [wget]
instructions: run
sandbox:
  image: agent:tiny
setup:
  - run: 'command -v node > "$RUN_DIR/node.txt" || echo absent > "$RUN_DIR/node.txt"'
`,
    });
    Object.assign(env, { SVC_CONFIG_DIR: dir, SVC_DATABASE_URL: database.url });
    const started = await startIngress(env);
    ingress = started.role;
    url = started.url;
    worker = await startWorkerProcess({ ...env, SVC_DAEMON_URL: url });
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
  }, 1_800_000);

  afterAll(async () => {
    await worker?.stop();
    await ingress?.stop();
    await pool?.end();
    await database?.drop();
    await engine?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it("a command agent with wget on network none reaches svc's tools through the forwarder, and the run completes", async () => {
    const id = await postWebhook(url, "tiny-hook", HOOK, {});
    await waitForTrigger(pool, id);
    const { workloads, invocations } = await lineage(pool, id);
    expect(invocations[0].diagnostic).toBeNull();
    expect(invocations[0].status).toBe("completed");
    expect(invocations[0].result).toEqual({
      node: "absent",
      mcp: `${CONTAINER_GATEWAY_URL}/mcp`,
      noted: true,
    });
    const runDir = join(dir, "workspaces", workloads[0].id, invocations[0].id, "run");
    expect((await readFile(join(runDir, "node.txt"), "utf8")).trim()).toBe("absent");
    const { rows } = await pool.query("SELECT title FROM svc.notes WHERE invocation_id = $1", [
      invocations[0].id,
    ]);
    expect(rows).toEqual([{ title: "from busybox" }]);
    // the run's end removed its containers, the forwarder's with the agent's
    const left = await engine.docker.listContainers({
      all: true,
      filters: { label: [`svc.invocation=${invocations[0].id}`] },
    });
    expect(left).toEqual([]);
    expect(await forwarders()).toEqual([]);
  }, 180_000);

  it("the agent's wget reaches its model through the gateway's base URL, and the forwarder dies with the agent's container", async () => {
    const api = new ScriptedModelApi();
    await api.start();
    api.answerWith = (_request, response) => {
      const message = {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "m",
        content: [{ type: "text", text: "hello from the model" }],
        stop_reason: "end_turn",
        usage: { input_tokens: 3, output_tokens: 5 },
      };
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(message));
    };
    const gatewayDatabase = await createTestDatabase(inject("adminDatabaseUrl"));
    const gatewayPool = new pg.Pool({ connectionString: gatewayDatabase.url, max: 3 });
    const root = await mkdtemp(join(tmpdir(), "svc-any-image-"));
    const { logger } = captureLogger();
    let gateway: ModelGateway | undefined;
    let sandbox: RunSandbox | undefined;
    try {
      await migrate(gatewayPool);
      const credentials = await CredentialCooldowns.load(gatewayPool, logger);
      gateway = new ModelGateway({ db: gatewayPool, credentials, logger });
      await gateway.start(0, "127.0.0.1", root);
      const account = await gateway.account({
        invocationId: "inv_any_image",
        taskId: "tsk_any_image",
        budget: undefined,
        onToken: () => {},
      });
      const lease = account.lease(targetOn("claude-code", api), "c0", MODEL_KEY);
      const paths = workspacePaths(root, "wl_any", "inv_any_image");
      for (const folder of [paths.checkout, paths.runDir, paths.surfaceDir, paths.agentDir, paths.logsDir])
        await mkdir(folder, { recursive: true, mode: 0o700 });
      const settings: SandboxSettings = {
        engine: { socket: engine.socket },
        network: "none",
        user: "1000:1000",
        limits: { ...DEFAULT_SANDBOX_LIMITS },
        images: {},
      };
      sandbox = new RunSandbox({
        ...{ docker: engine.docker, settings, sandbox: { image: "agent:tiny", mounts: [] } },
        ...{ configDir: root, paths, invocationId: "inv_any_image", workerId: "any-image", logger },
        gatewaySocket: gateway.socketPath,
      });
      const base = sandbox.modelGatewayUrl(gateway.url);
      expect(base).toBe(CONTAINER_GATEWAY_URL);
      const body = JSON.stringify({
        model: "m",
        max_tokens: 16,
        messages: [{ role: "user", content: "hi" }],
      });
      const outcome = await sandbox.agent.run({
        argv: [
          "/bin/sh",
          "-c",
          'wget -q -O - --header "x-api-key: $TOKEN" --header "anthropic-version: 2023-06-01" --header "Content-Type: application/json" --post-data "$BODY" "$BASE/v1/messages"',
        ],
        cwd: paths.checkout,
        env: { TOKEN: lease.token, BODY: body, BASE: gateway.clientUrl(lease, base) },
        logFile: join(paths.logsDir, "transcript.log"),
        captureStdout: true,
      });
      expect(sandbox.failure()).toBeUndefined();
      expect(outcome.exitCode).toBe(0);
      expect(JSON.parse(outcome.stdout).content).toEqual([{ type: "text", text: "hello from the model" }]);
      // the model saw the credential, which only the gateway holds, never the agent's token
      expect(api.requests.map((request) => request.key)).toEqual([MODEL_KEY]);
      await account.close();

      // the agent container's init killed behind the worker's back (an OOM kill, a `docker kill`):
      // the forwarder ends with it, by the kernel (its PID namespace) and the engine alone, and no
      // removal of anything by anyone
      const [forwarder] = await forwarders();
      expect(forwarder?.Image).toBe("agent:default");
      expect(forwarder?.State).toBe("running");
      const agentId = forwarder!.Labels[FORWARDER_LABEL]!;
      // the agent's user and confinement; in the agent's PID namespace, so the kernel ends it with
      // the agent's init (the engine, which also stops what shares a stopped container's network,
      // does so only after its stop timeout, and only while it runs)
      const { Config, HostConfig } = await engine.docker.getContainer(forwarder!.Id).inspect();
      expect(Config.User).toBe("1000:1000");
      expect(HostConfig).toMatchObject({
        NetworkMode: `container:${agentId}`,
        PidMode: `container:${agentId}`,
        CapDrop: ["ALL"],
        SecurityOpt: ["no-new-privileges"],
        ReadonlyRootfs: true,
      });
      await engine.docker.getContainer(agentId).kill();
      await waitFor(async () => (await forwarders()).length === 0 || undefined, "the forwarder to be gone");
    } finally {
      await sandbox?.agent.close();
      await gateway?.close();
      await gatewayPool.end();
      await gatewayDatabase.drop();
      await api.stop();
      await rm(root, { recursive: true, force: true });
    }
  }, 180_000);
  it("a forwarder its worker created but never started is swept once its agent's container is gone", async () => {
    const root = await mkdtemp(join(tmpdir(), "svc-any-image-"));
    try {
      const settings: SandboxSettings = {
        engine: { socket: engine.socket },
        network: "none",
        user: "1000:1000",
        limits: { ...DEFAULT_SANDBOX_LIMITS },
        images: {},
      };
      const request: SandboxRequest = {
        ...{ docker: engine.docker, settings, sandbox: { image: "agent:tiny", mounts: [] }, configDir: root },
        ...{ paths: workspacePaths(root, "wl_swept", "inv_swept"), invocationId: "inv_swept" },
        ...{ workerId: "died", logger: captureLogger().logger },
      };
      for (const folder of [request.paths.checkout, request.paths.runDir, request.paths.surfaceDir])
        await mkdir(folder, { recursive: true });
      // an agent's container the sweeper does not judge by its run (no svc.invocation), so only
      // the forwarder's own rule is at work
      const agent = await engine.docker.createContainer({
        ...createOptions(request, "agent", "agent:tiny", "1000:1000"),
        Labels: {},
      });
      await agent.start();
      // what a worker that died between the forwarder's create and its start leaves (forwarder.ts)
      const forwarder = await engine.docker.createContainer({
        Image: "agent:default",
        Cmd: ["true"],
        Labels: { [FORWARDER_LABEL]: agent.id, "svc.worker": "died" },
        HostConfig: { NetworkMode: `container:${agent.id}`, PidMode: `container:${agent.id}` },
      });
      // its agent's container running: the sweeper leaves it
      await sweepSandboxContainers(pool, { sandboxes: settings });
      expect((await forwarders()).map((c) => c.Id)).toEqual([forwarder.id]);
      await agent.remove({ force: true });
      await sweepSandboxContainers(pool, { sandboxes: settings });
      expect(await forwarders()).toEqual([]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  }, 60_000);
});
