import type Docker from "dockerode";
import { AGENT_CLIS, pinnedVersion } from "../../shared/agent-clis/pins.ts";
import type { SandboxSettings } from "../../shared/config/sandbox-types.ts";
import { ConfigFile } from "../../shared/config/source.ts";
import type { AgentCliTarget, ConfigProblem, ConfigSnapshot } from "../../shared/config/types.ts";
import { engineLabel, imageExists, openEngine } from "../../shared/sandbox/engine.ts";
import { variantOf } from "../../shared/sandbox/images.ts";
import { sandboxSettings } from "../../shared/sandbox/settings.ts";
import { engineVersion } from "./deep-sandbox.ts";
import type { CheckOutcome, CheckStatus, DoctorCheck } from "./types.ts";

const VERSION = /\d+\.\d+\.\d+[0-9A-Za-z.+-]*/;
/** how long `<cli> --version` may run in its container */
const RUN_TIMEOUT_MS = 60_000;
/** what of a container's output is shown in a message */
const SHOWN = 300;

/** One CLI to start in one image: the target whose runs start it there, and the pipelines that run it. */
interface Probe {
  image: string;
  target: AgentCliTarget;
  /** what the run's argv starts with in the container (worker/runtimes/agent-cli/) */
  command: string;
  pipelines: string[];
}

/**
 * `svc doctor --deep`, the agent's link: each agent CLI a sandboxed pipeline runs (a claude-code
 * or codex target of the pipeline) starts in the pipeline's image: a container of that image, as
 * its runs make them (the image's non-root user or `sandboxes.user`, no network, no capability,
 * a read-only root), runs `<bin or claude/codex> --version`. A CLI that does not start or prints
 * no version is `agent_cli_missing`, another version than the pin `agent_cli_version` (a
 * warning). An engine that does not answer, or an image that is not there, leaves its CLIs
 * unchecked, and the detail says so (the sandbox check names the cause).
 */
export const agentImageCheck: DoctorCheck = {
  name: "agent-in-image",
  async run(ctx): Promise<CheckOutcome> {
    const loaded = await ctx.config();
    if (!loaded.ok) return { status: "skipped", detail: "the configuration has errors", problems: [] };
    const { config } = loaded;
    const probes = probesOf(config);
    if (probes.length === 0)
      return {
        status: "skipped",
        detail: "no sandboxed pipeline runs a claude-code or codex target",
        problems: [],
      };
    const settings = sandboxSettings(config);
    const docker = openEngine(settings.engine);
    try {
      await engineVersion(docker);
    } catch {
      return {
        status: "skipped",
        detail: `not checked: the container engine at ${engineLabel(settings.engine)} does not answer (see sandbox)`,
        problems: [],
      };
    }
    const problems: ConfigProblem[] = [];
    const file = new ConfigFile("daemon.yaml", problems);
    const details: string[] = [];
    let unchecked = 0;
    for (const probe of probes) {
      const { image, target, command } = probe;
      const runs = `${probe.pipelines.join(", ")} on target ${target.name}`;
      if (!(await imageExists(docker, image))) {
        details.push(`${image}: ${command} not checked (no image, see sandbox)`);
        unchecked += 1;
        continue;
      }
      const answer = await versionIn(docker, image, command, settings);
      const where = ["targets", target.name, ...(target.bin ? ["bin"] : [])];
      const pin = pinnedVersion(target.runtime);
      const fix = `${imageFix(image, `${AGENT_CLIS[target.runtime].package}@${pin}`, settings)}${target.bin ? `, or make "targets.${target.name}.bin" name the CLI's path in the image` : ""}`;
      if ("failed" in answer) {
        file.report(
          where,
          "agent_cli_missing",
          `"${command} --version" does not run in ${image}, which ${runs} runs in: ${answer.failed} - ${fix}`,
        );
        details.push(`${image}: ${command} does not start`);
      } else if (answer.version !== pin) {
        file.report(
          where,
          "agent_cli_version",
          `${command} in ${image} is ${answer.version}, the pin is ${pin} - ${fix}`,
          "warning",
        );
        details.push(`${image}: ${command} ${answer.version} (pinned ${pin})`);
      } else {
        details.push(`${image}: ${command} ${answer.version} (pinned)`);
      }
    }
    const status: CheckStatus = problems.some((p) => p.severity === "error")
      ? "error"
      : problems.length
        ? "warning"
        : unchecked === probes.length
          ? "skipped"
          : "ok";
    return { status, detail: details.join(", "), problems };
  },
};

/** How the CLI gets into `image`: the release's own image, or the variant's build or reference made anew. */
function imageFix(image: string, cli: string, settings: SandboxSettings): string {
  const variant = variantOf(image);
  const spec = variant ? settings.images[variant] : undefined;
  if (!spec) return `run "svc image pull" for the ${image} of this release, which has ${cli}`;
  const source = "build" in spec ? `.svc/${spec.build}/Dockerfile` : `the image ${spec.pull}`;
  return `install ${cli} in ${source}, then remove ${image} from the engine (docker image rm ${image}) so the next run makes it anew`;
}

/** Each (image, CLI) a sandboxed pipeline's runs start, once. */
function probesOf(config: ConfigSnapshot): Probe[] {
  const probes = new Map<string, Probe>();
  for (const pipeline of Object.values(config.pipelines)) {
    if (!pipeline.sandbox) continue;
    for (const name of pipeline.targets) {
      const target = config.targets[name];
      if (target?.runtime !== "claude-code" && target?.runtime !== "codex") continue;
      const command = target.bin ?? AGENT_CLIS[target.runtime].command;
      const key = `${pipeline.sandbox.image}\u0000${command}`;
      const probe = probes.get(key) ?? { image: pipeline.sandbox.image, target, command, pipelines: [] };
      if (!probe.pipelines.includes(pipeline.name)) probe.pipelines.push(pipeline.name);
      probes.set(key, probe);
    }
  }
  return [...probes.values()];
}

/** `<command> --version` in a throwaway container of `image`; its version, or why it did not run. */
async function versionIn(
  docker: Docker,
  image: string,
  command: string,
  settings: SandboxSettings,
): Promise<{ version: string } | { failed: string }> {
  let container: Docker.Container | undefined;
  try {
    const info = await docker.getImage(image).inspect();
    const own = info.Config?.User?.trim() ?? "";
    const name = own.split(":")[0];
    container = await docker.createContainer({
      Image: image,
      Entrypoint: [command],
      Cmd: ["--version"],
      // as a run's container: never root, nothing to reach, nothing to write but /tmp
      User: own && name !== "root" && name !== "0" ? own : settings.user,
      Env: [],
      Labels: { "svc.role": "doctor" },
      HostConfig: {
        NetworkMode: "none",
        CapDrop: ["ALL"],
        SecurityOpt: ["no-new-privileges"],
        ReadonlyRootfs: true,
        Tmpfs: { "/tmp": "rw,nosuid,nodev,size=64m,mode=1777" },
        Init: true,
      },
    });
    await container.start();
    const waited = await Promise.race([
      container.wait() as Promise<{ StatusCode?: number }>,
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), RUN_TIMEOUT_MS).unref()),
    ]);
    const output = demux((await container.logs({ stdout: true, stderr: true })) as unknown as Buffer);
    if (!waited) return { failed: `no exit within ${RUN_TIMEOUT_MS / 1000} s` };
    const shown = output.trim().slice(0, SHOWN) || "no output";
    if (waited.StatusCode !== 0) return { failed: `exit ${waited.StatusCode}: ${shown}` };
    const version = VERSION.exec(output)?.[0];
    return version ? { version } : { failed: `it printed no version: ${shown}` };
  } catch (error) {
    // the engine's own words: "exec: "claude": executable file not found in $PATH"
    const message = (error as { json?: { message?: string } }).json?.message ?? (error as Error).message;
    return { failed: String(message).split("\n")[0]!.slice(0, SHOWN) };
  } finally {
    await container?.remove({ force: true }).catch(() => {});
  }
}

/**
 * The text of a container's log as the engine sends it without a TTY: frames of an 8-byte header
 * (stream, three zero bytes, big-endian length) and their bytes; anything else is taken as it is.
 */
export function demux(raw: Buffer | string): string {
  const buffer = typeof raw === "string" ? Buffer.from(raw, "binary") : raw;
  const parts: Buffer[] = [];
  let at = 0;
  while (at + 8 <= buffer.length) {
    const stream = buffer[at]!;
    if (stream > 2 || buffer[at + 1] !== 0 || buffer[at + 2] !== 0 || buffer[at + 3] !== 0)
      return buffer.toString("utf8");
    const length = buffer.readUInt32BE(at + 4);
    parts.push(buffer.subarray(at + 8, at + 8 + length));
    at += 8 + length;
  }
  return at === 0 ? buffer.toString("utf8") : Buffer.concat(parts).toString("utf8");
}
