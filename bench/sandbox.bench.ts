/**
 * Sandbox overhead (`npm run bench -- sandbox`; needs root: it starts its own dockerd, as the
 * sandbox e2e suite does, from test/support/sandbox-engine.ts). All measured in this one run, on one
 * engine, round by round, so the machine's load weighs on every figure alike:
 * - baseline: the floor of `docker run --rm` of agent:default with `true` (create, start, wait,
 *   remove through the Engine API, as the worker talks to it);
 * - a sandboxed no-op run as the worker's run phases drive its engines (worker/exec/sandbox): one
 *   setup step `true`, the setup engine closed (not awaited, as phases.ts does), a `command`-style agent
 *   that reads its prompt on stdin and prints `{}`, then both engines closed (containers removed).
 *   The database and queue work around a run is the same sandboxed or not, and left out. The
 *   engines are given a model gateway's socket, as a worker's are, so the agent's container gets
 *   the forwarder to it (network none) as in production;
 * - the model gateway's forwarder alone, from an idle agent container started (untimed) to the
 *   forwarder listening on its loopback, both ways: svc's container beside the agent's (forwarder.ts,
 *   what runs now: create, attach, start, `node` ready) and, as svc did before any image could
 *   serve, an exec of the agent image's own `node` inside the agent's container (same script).
 *   The containers' removal is left out of both (the whole no-op run above counts it);
 * - with SVC_BENCH_COMPARE=<another checkout> (e.g. `git archive main` in /tmp with node_modules
 *   linked), the same no-op run on that checkout's worker/exec/sandbox too, interleaved: e.g. the
 *   forwarder exec'd in the agent's container (before) against beside it (after).
 * Figures: median and minimum wall time of each, and each median's ratio to the `docker run` floor.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type Docker from "dockerode";
import type { Queryable } from "../db/queryable.ts";
import type { PipelineSandbox } from "../shared/config/sandbox-types.ts";
import { DEFAULT_SANDBOX_LIMITS } from "../shared/config/sandboxes.ts";
import type { ConfigSnapshot } from "../shared/config/types.ts";
import { createLogger } from "../shared/logger.ts";
import { sandboxSettings } from "../shared/sandbox/settings.ts";
import { workspacePaths } from "../shared/workspace-layout.ts";
import {
  engineSuiteUnavailable,
  pullTagged,
  startEngineWithImages,
  type TestEngine,
} from "../test/support/sandbox-engine.ts";
import type { ProcessEngine } from "../worker/exec/engine.ts";
import {
  CONTAINER_GATEWAY_SOCKET,
  CONTAINER_GATEWAY_URL,
  FORWARDER,
  startForwarder,
} from "../worker/exec/sandbox/forwarder.ts";
import { createOptions, type SandboxRequest } from "../worker/exec/sandbox/options.ts";
import { ModelGateway } from "../worker/gateway/gateway.ts";

const ROUNDS = Number(process.env.BENCH_SAMPLES ?? 10);
const IMAGE = "agent:default";

const wallMs = () => performance.timeOrigin + performance.now();
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const fmt = (ms: number) => `${ms.toFixed(0)} ms`;

/** `openSandbox` of a checkout: this one's gives two engines, an older one's may give one for both phases. */
type OpenSandbox = (
  run: {
    config: Readonly<ConfigSnapshot>;
    logger: ReturnType<typeof createLogger>;
    workerId: string;
    gateway?: { socketPath: string | undefined };
  },
  sandbox: PipelineSandbox,
  where: { paths: ReturnType<typeof workspacePaths>; invocationId: string },
) => ProcessEngine | { setup: ProcessEngine; agent: ProcessEngine };

async function dockerRun(engine: TestEngine): Promise<number> {
  const started = wallMs();
  const container = await engine.docker.createContainer({
    Image: IMAGE,
    Entrypoint: ["true"],
    HostConfig: { NetworkMode: "none" },
  });
  await container.start();
  await container.wait();
  await container.remove({ force: true });
  return wallMs() - started;
}

/** A run's settings on the bench's engine: network none, the default limits. */
function benchConfig(engine: TestEngine, root: string): ConfigSnapshot {
  return {
    dir: root,
    sandboxes: {
      engine: { socket: engine.socket },
      network: "none",
      user: "1000:1000",
      limits: { ...DEFAULT_SANDBOX_LIMITS },
      images: {},
    },
  } as unknown as ConfigSnapshot;
}

/**
 * The forwarder's start alone (ms), `beside` (this checkout) or by exec in the agent's container
 * (before): an idle agent container made and started first, both removed after, untimed.
 */
async function forwarderStart(
  way: "beside" | "exec",
  engine: TestEngine,
  root: string,
  socketPath: string,
): Promise<number> {
  const invocationId = `inv_bench_fwd_${Math.random().toString(36).slice(2, 8)}`;
  const paths = workspacePaths(root, "wl_bench", invocationId);
  for (const dir of [paths.checkout, paths.runDir, paths.surfaceDir, paths.agentDir])
    await mkdir(dir, { recursive: true, mode: 0o700 });
  const request: SandboxRequest = {
    ...{ docker: engine.docker, settings: sandboxSettings(benchConfig(engine, root)) },
    ...{ sandbox: { image: IMAGE, mounts: [] }, configDir: root, paths, invocationId },
    ...{ workerId: "bench", logger: createLogger({ role: "worker", format: "json", level: "error" }) },
    gatewaySocket: socketPath,
  };
  const options = createOptions(request, "agent", IMAGE, "1000:1000");
  // the socket where the forwarder inside the agent's container used to find it
  if (way === "exec") options.HostConfig!.Binds!.push(`${socketPath}:${CONTAINER_GATEWAY_SOCKET}:ro`);
  const agent = await engine.docker.createContainer(options);
  let forwarder: Docker.Container | undefined;
  try {
    await agent.start();
    const started = wallMs();
    if (way === "beside") {
      await startForwarder(request, agent, { uid: 1000, gid: 1000 }, (created) => {
        forwarder = created;
      });
    } else {
      const port = new URL(CONTAINER_GATEWAY_URL).port;
      const exec = await agent.exec({
        Cmd: ["node", "-e", FORWARDER, CONTAINER_GATEWAY_SOCKET, port],
        AttachStdout: true,
        AttachStderr: true,
      });
      const stream = await exec.start({ hijack: true, stdin: false });
      await new Promise<void>((resolve, reject) => {
        let said = "";
        stream.on("data", (chunk: Buffer) => {
          said += chunk.toString("latin1");
          if (said.includes("ready\n")) resolve();
        });
        stream.once("end", () => reject(new Error(`the forwarder exited: ${said}`)));
      });
    }
    return wallMs() - started;
  } finally {
    await Promise.all([agent.remove({ force: true }), forwarder?.remove({ force: true }).catch(() => {})]);
  }
}

async function sandboxedRun(
  open: OpenSandbox,
  engine: TestEngine,
  root: string,
  round: number,
  gateway: { socketPath: string | undefined },
): Promise<number> {
  const invocationId = `inv_bench_${round}_${Math.random().toString(36).slice(2, 8)}`;
  const paths = workspacePaths(root, "wl_bench", invocationId);
  for (const dir of [paths.checkout, paths.runDir, paths.surfaceDir, paths.agentDir, paths.logsDir])
    await mkdir(dir, { recursive: true, mode: 0o700 });
  const config = benchConfig(engine, root);
  const logger = createLogger({ role: "worker", format: "json", level: "error" });
  const started = wallMs();
  const opened = open(
    { config, logger, workerId: "bench", gateway },
    { image: IMAGE, mounts: [] },
    { paths, invocationId },
  );
  const engines = "setup" in opened ? opened : { setup: opened, agent: opened };
  try {
    const step = await engines.setup.run({
      argv: ["/bin/sh", "-c", "true"],
      cwd: paths.checkout,
      env: { WORKTREE: paths.checkout, RUN_DIR: paths.runDir },
      logFile: join(paths.logsDir, "setup-0.log"),
      truncate: true,
    });
    if (step.exitCode !== 0) throw new Error(`the setup step failed: ${JSON.stringify(step)}`);
    // as phases.ts does between the phases (the removal goes on beside the agent's start); one
    // engine for both (one container) has nothing to close yet
    if (engines.setup !== engines.agent) void engines.setup.close();
    const agent = await engines.agent.run({
      argv: ["/bin/sh", "-c", "cat > /dev/null; echo '{}'"],
      cwd: paths.checkout,
      env: { WORKTREE: paths.checkout },
      stdin: "the prompt",
      logFile: join(paths.logsDir, "transcript.log"),
      captureStdout: true,
    });
    if (agent.exitCode !== 0 || agent.stdout.trim() !== "{}")
      throw new Error(`the agent failed: ${JSON.stringify(agent)}`);
  } finally {
    await Promise.all([engines.setup.close(), engines.agent.close()]);
  }
  return wallMs() - started;
}

async function main(): Promise<void> {
  const unavailable = engineSuiteUnavailable();
  if (unavailable) {
    console.log(`sandbox benchmark skipped: ${unavailable}`);
    return;
  }
  const ready = await startEngineWithImages();
  const { engine } = ready;
  const root = await mkdtemp(join(tmpdir(), "svc-bench-sandbox-"));
  let modelGateway: ModelGateway | undefined;
  try {
    await pullTagged(engine, ready.registry, IMAGE);
    // a worker's gateway, for its socket: the bench's agent makes no model call
    const noDatabase = {
      query: () => Promise.reject(new Error("no database in this bench")),
    } as unknown as Queryable;
    const credentials = { markDead: async () => {}, markCooling: async () => {} };
    const gatewayLogger = createLogger({ role: "worker", format: "json", level: "error" });
    modelGateway = new ModelGateway({ db: noDatabase, credentials, logger: gatewayLogger });
    await modelGateway.start(0, "127.0.0.1", root);
    const gateway = { socketPath: modelGateway.socketPath };
    const here = (await import("../worker/exec/sandbox/engine.ts")).openSandbox as unknown as OpenSandbox;
    const compareDir = process.env.SVC_BENCH_COMPARE;
    const other = compareDir
      ? ((await import(join(compareDir, "worker", "exec", "sandbox", "engine.ts")))
          .openSandbox as OpenSandbox)
      : undefined;
    const socket = modelGateway.socketPath!;
    const samples = {
      ...{ floor: [] as number[], here: [] as number[], other: [] as number[] },
      ...{ beside: [] as number[], exec: [] as number[] },
    };
    // one untimed round of each first: the image's layers into the page cache, the modules' code compiled
    await dockerRun(engine);
    await sandboxedRun(here, engine, root, -1, gateway);
    if (other) await sandboxedRun(other, engine, root, -2, gateway);
    await forwarderStart("beside", engine, root, socket);
    await forwarderStart("exec", engine, root, socket);
    for (let round = 0; round < ROUNDS; round++) {
      samples.floor.push(await dockerRun(engine));
      samples.here.push(await sandboxedRun(here, engine, root, round, gateway));
      if (other) samples.other.push(await sandboxedRun(other, engine, root, round, gateway));
      samples.beside.push(await forwarderStart("beside", engine, root, socket));
      samples.exec.push(await forwarderStart("exec", engine, root, socket));
    }
    const floor = median(samples.floor);
    const line = (name: string, values: number[]) =>
      `${name}: median ${fmt(median(values))} (min ${fmt(Math.min(...values))}), ${(median(values) / floor).toFixed(2)}x the docker run floor`;
    console.log(
      `load average ${loadavg()
        .map((value) => value.toFixed(2))
        .join(" ")}; ${ROUNDS} rounds`,
    );
    console.log(
      `baseline docker run --rm ${IMAGE} true: median ${fmt(floor)} (min ${fmt(Math.min(...samples.floor))})`,
    );
    console.log(line("sandboxed no-op run, this checkout", samples.here));
    console.log(line("forwarder start, svc's container beside the agent's (now)", samples.beside));
    console.log(line("forwarder start, exec of the image's node in the agent's (before)", samples.exec));
    if (other) {
      console.log(line(`sandboxed no-op run, ${compareDir}`, samples.other));
      console.log(
        `this checkout against ${compareDir}: ${fmt(median(samples.here) - median(samples.other))} per run (medians)`,
      );
    }
  } finally {
    await modelGateway?.close();
    await rm(root, { recursive: true, force: true });
    await engine.stop();
  }
}

await main();
